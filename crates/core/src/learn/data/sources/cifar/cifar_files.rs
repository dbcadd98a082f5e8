//! The tests of `data.kind = "cifar10"` that go through a `DataPlan` and
//! the data checks (a child of `cifar.rs`, so that `cifar.rs` and
//! `images.rs` do not import the plan that imports them).

use std::path::Path;

use super::testing::{TEST_IDS, image, write_folder};
use super::{RECORD_BYTES, write_cifar};
use crate::config::Config;
use crate::learn::data::DataPlan;
use crate::learn::data::checks::check_data_files;
use crate::learn::data::plan::testing::config;

/// A cifar10 config of the folder `dir` for 2 workers, with `[data]`
/// lines `data` and the sections `rest`.
fn cifar(dir: &Path, data: &str, rest: &str) -> Config {
    config(&format!(
        "workers = 2\n[data]\nkind = \"cifar10\"\npath = \"{}\"\n{data}{rest}",
        dir.display()
    ))
}

/// A network over CIFAR-10 gets images of 3 × 32 × 32.
#[test]
fn a_network_gets_images_of_three_channels() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), [2, 2, 2, 2, 2, 4]);
    let data = "train_samples = 10\ntest_samples = 4\n";
    for model in [
        "[model]\nkind = \"cnn\"\n",
        "[model]\nkind = \"resnet\"\nresnet_blocks = [1]\nresnet_width = 2\n",
    ] {
        let c = cifar(dir.path(), data, model);
        let plan = DataPlan::new(&c, 2).unwrap();
        assert_eq!(plan.input().image, Some([3, 32, 32]));
        assert_eq!(plan.features(), 3072);
        let choice = check_data_files(&c, 2).unwrap();
        let described = choice.model.unwrap();
        assert!(described.contains("input 3x32x32"), "{described}");
        assert_eq!(choice.features, Some(3072));
    }
    // Flat samples are refused for them, naming both kinds of images:
    // by the model registry's check, which the loader applies.
    let flat =
        crate::config::parse("workers = 2\n[model]\nkind = \"resnet\"\n", "test", &[]).unwrap();
    let e = crate::learn::model::MODELS.check(&flat.config).unwrap_err();
    assert!(
        e.to_string()
            .contains("needs images (data.kind = \"idx\" or \"cifar10\")"),
        "{e}"
    );
}

/// Standardised per channel with the mean and deviation of the
/// training images' pixels: the training pixels of each channel have
/// mean 0 and variance 1, and the test images are scaled with the
/// training statistics, not their own.
#[test]
fn standardisation_is_per_channel_over_the_training_images() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), [3, 2, 2, 1, 4, 5]);
    let c = cifar(dir.path(), "train_samples = 12\ntest_samples = 5\n", "");
    let plan = DataPlan::new(&c, 2).unwrap();
    let parts = plan.load(&[0, 1]).unwrap();
    let mut stats = Vec::new();
    for channel in 0..3 {
        let values: Vec<f64> = parts
            .iter()
            .flat_map(|p| {
                let x = p.x.to_dense();
                x.rows()
                    .into_iter()
                    .flat_map(|r| r.to_vec()[channel * 1024..(channel + 1) * 1024].to_vec())
                    .collect::<Vec<_>>()
            })
            .collect();
        let n = values.len() as f64;
        assert_eq!(n, 12.0 * 1024.0);
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(
            mean.abs() < 1e-9 && (var - 1.0).abs() < 1e-9,
            "channel {channel}: {mean} {var}"
        );
        // The training statistics from the raw pixels of records 0..12.
        let raw: Vec<f64> = (0..12)
            .flat_map(|id| image(id)[channel * 1024..(channel + 1) * 1024].to_vec())
            .map(|v| v as f64 / 255.0)
            .collect();
        let m = raw.iter().sum::<f64>() / n;
        let sd = (raw.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n).sqrt();
        stats.push((m, sd));
    }
    // Channels differ (pixels 80c ..= 80c + 59): one normalisation each.
    assert!(
        stats[0].0 < stats[1].0 && stats[1].0 < stats[2].0,
        "{stats:?}"
    );
    let test = plan.load_test().unwrap();
    let x = test.x.to_dense();
    for row in x.rows() {
        // Pixel (0, 0, 0) is the record's id.
        let id = ((row[0] * stats[0].1 + stats[0].0) * 255.0).round() as usize;
        assert!((TEST_IDS..TEST_IDS + 5).contains(&id), "{id}");
        for (j, &v) in row.iter().enumerate() {
            let (m, sd) = stats[j / 1024];
            let want = (image(id)[j] as f64 / 255.0 - m) / sd;
            assert!(
                (v - want).abs() < 1e-9,
                "test record {id}, feature {j}: {v} {want}"
            );
        }
    }
}

/// The one-line refusal of `c` by the plan, its loads or the data checks:
/// (field, message).
fn refused(c: &Config) -> (String, String) {
    let e = DataPlan::new(c, 2)
        .and_then(|p| p.load(&[0, 1]).map(|_| ()))
        .and_then(|_| check_data_files(c, 2).map(|_| ()))
        .unwrap_err();
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    (e.field.clone(), text)
}

/// Label 10 in record 2 of batch 4 of `folder`, and a label not below
/// model.classes, refused naming the file, the record and the rule (the
/// caller puts batch 4 back).
fn bad_labels_are_refused(folder: &Path, data: &str) {
    // Label 10 in record 2 of batch 4: named by the data checks and by the load.
    let batch4 = folder.join("data_batch_4.bin");
    let c = cifar(folder, data, "");
    write_cifar(&batch4, &[1, 10], &[image(0), image(1)].concat()).unwrap();
    let rule = format!(
        "data.path: {} record 2 (byte 3073): label 10 is not a CIFAR-10 class (0..=9)",
        batch4.display()
    );
    assert_eq!(check_data_files(&c, 2).unwrap_err().to_string(), rule);
    let plan = DataPlan::new(&c, 2).unwrap();
    assert_eq!(plan.load(&[0]).unwrap_err().to_string(), rule);
    // Below 10 but not below model.classes (labels are id · 3 mod 10:
    // record 1 of batch 1 is 0, record 2 is 3, batch 2's first is 6).
    let five = cifar(
        folder,
        data,
        "[model]\nkind = \"mlp\"\nhidden = [2]\nclasses = 5\n",
    );
    let (field, e) = refused(&five);
    assert_eq!(field, "data.path");
    assert!(
        e.contains("data_batch_2.bin record 1 (byte 0): label 6 is not below model.classes = 5"),
        "{e}"
    );
}

/// A FIFO as a batch of `folder` and as the folder (made in `dir`),
/// refused without being opened.
#[cfg(unix)]
fn fifos_are_refused(dir: &Path, folder: &Path, data: &str) {
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success(), "mkfifo");
    let (field, e) = refused(&cifar(&fifo, data, ""));
    assert_eq!(field, "data.path");
    assert!(e.contains("is a FIFO (named pipe), not a folder"), "{e}");
    let test = folder.join("test_batch.bin");
    std::fs::remove_file(&test).unwrap();
    std::fs::rename(&fifo, &test).unwrap();
    let (_, e) = refused(&cifar(folder, data, ""));
    assert!(
        e.contains("test_batch.bin is a FIFO (named pipe), not a regular file"),
        "{e}"
    );
    std::fs::remove_file(&test).unwrap();
}

/// Bad folders and files are refused in one line naming the field, the
/// file and the rule; nothing is allocated for a bogus size, nothing
/// panics.
#[test]
fn bad_cifar_files_are_refused_naming_the_field_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("cifar");
    write_folder(&folder, [2, 2, 2, 2, 2, 2]);
    let data = "train_samples = 10\ntest_samples = 2\n";
    let c = cifar(&folder, data, "");
    let batch3 = folder.join("data_batch_3.bin");
    let good3 = std::fs::read(&batch3).unwrap();
    // 1000 records and one byte.
    std::fs::write(&batch3, vec![0u8; 1000 * RECORD_BYTES + 1]).unwrap();
    assert_eq!(
        refused(&c),
        (
            "data.path".to_string(),
            format!(
                "data.path: {} is 3073001 bytes, not a whole number of 3073-byte records",
                batch3.display()
            )
        )
    );
    // No record.
    std::fs::write(&batch3, b"").unwrap();
    let (_, e) = refused(&c);
    assert!(
        e.contains("data_batch_3.bin is 0 bytes: it holds no 3073-byte record"),
        "{e}"
    );
    // A sparse file of 2^40 bytes: refused from its size.
    let huge = std::fs::File::create(&batch3).unwrap();
    huge.set_len(((1u64 << 40) / RECORD_BYTES as u64) * RECORD_BYTES as u64)
        .unwrap();
    let (_, e) = refused(&c);
    assert!(e.contains("more than data.max_matrix_mib = 4096"), "{e}");
    std::fs::write(&batch3, &good3).unwrap();
    DataPlan::new(&c, 2).unwrap();
    let batch4 = folder.join("data_batch_4.bin");
    let good4 = std::fs::read(&batch4).unwrap();
    bad_labels_are_refused(&folder, data);
    std::fs::write(&batch4, &good4).unwrap();
    // A missing batch.
    std::fs::rename(&batch4, dir.path().join("away.bin")).unwrap();
    let (field, e) = refused(&c);
    assert_eq!(field, "data.path");
    assert!(
        e.contains(&format!("{} is missing", batch4.display()))
            && e.contains("data_batch_1.bin … data_batch_5.bin and test_batch.bin"),
        "{e}"
    );
    std::fs::rename(dir.path().join("away.bin"), &batch4).unwrap();
    // A FIFO as a batch, and as the folder: refused without being opened.
    #[cfg(unix)]
    fifos_are_refused(dir.path(), &folder, data);
    // A file as the folder, a folder that is not there.
    let (_, e) = refused(&cifar(&batch4, data, ""));
    assert!(e.contains("is a regular file, not a folder"), "{e}");
    let (_, e) = refused(&cifar(&dir.path().join("nowhere"), data, ""));
    assert!(
        e.starts_with("data.path = \"") && e.contains("cannot be read"),
        "{e}"
    );
    // More images asked for than the files hold.
    write_folder(&folder, [2, 2, 2, 2, 2, 2]);
    let (field, e) = refused(&cifar(
        &folder,
        "train_samples = 11\ntest_samples = 2\n",
        "",
    ));
    assert_eq!(field, "data.train_samples");
    assert!(e.contains("must be in 1..=10 (the images of "), "{e}");
}

#[test]
fn cifar10_keys_are_validated_naming_the_field() {
    let bad = |text: &str| crate::config::parse(text, "test", &[]).unwrap_err();
    let base = "workers = 2\n[data]\nkind = \"cifar10\"\npath = \"/data/cifar\"\n";
    let e = bad(&format!(
        "{base}test_path = \"/data/cifar/test_batch.bin\"\n"
    ));
    assert_eq!(e.field, "data.test_path", "{e}");
    let e = bad(&format!("{base}labels_path = \"x\"\n"));
    assert_eq!(e.field, "data.labels_path", "{e}");
    let e = bad(&format!("{base}format = \"sparse\"\n"));
    assert!(
        e.to_string()
            .contains("images (data.kind = cifar10) are dense"),
        "{e}"
    );
    let missing = config("workers = 2\n[data]\nkind = \"cifar10\"\n");
    let e = DataPlan::new(&missing, 2).unwrap_err();
    assert_eq!(e.field, "data.path", "{e}");
    assert!(e.to_string().contains("data.set is not given"), "{e}");
}
