//! The binary version of CIFAR-10 (Krizhevsky 2009, "CIFAR-10 binary
//! version" on <https://www.cs.toronto.edu/~kriz/cifar.html>).
//!
//! A folder holds the training images in `data_batch_1.bin` …
//! `data_batch_5.bin` and the test images in `test_batch.bin`. Each file is
//! records of [`RECORD_BYTES`] bytes: a label byte (a class, 0 ..= 9) and
//! the 3072 bytes of a 32 × 32 colour image, its 1024 red pixels, then the
//! 1024 green and the 1024 blue, each row-major from the top left: the
//! channels × height × width layout the image reader takes
//! ([`crate::learn::images`]), so pixel (c, y, x) is byte 1024c + 32y + x of
//! the image.
//!
//! A file's records come from its size, which must be a whole, non-zero
//! number of records; the records of a set of files, as a dense matrix of
//! f64 (records × 3072 × 8 bytes), must fit in `data.max_matrix_mib`. Both
//! are checked before a byte is read or anything allocated in proportion to
//! them ([`count`]). The records of several files are one sequence: record
//! i of the training images is the record of the batch files in turn.
//!
//! Every error is one line that names the config key of the folder
//! (`data.path` or `data.set`), the file, and, for a bad label, the record.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::InputError;

/// Classes of CIFAR-10: labels are 0 ..= 9.
pub const CLASSES: usize = 10;

/// (channels, height, width) of every image.
pub const SHAPE: [usize; 3] = [3, 32, 32];

/// Bytes of an image: 3 × 32 × 32.
pub const IMAGE_BYTES: usize = 3 * 32 * 32;

/// Bytes of a record: the label byte and the image.
pub const RECORD_BYTES: usize = 1 + IMAGE_BYTES;

/// The training batches of the folder, in the order their records are numbered.
pub const TRAIN_FILES: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];

/// The test batch of the folder.
pub const TEST_FILE: &str = "test_batch.bin";

/// What the folder holds, for messages.
pub const LAYOUT: &str =
    "the CIFAR-10 binary version holds data_batch_1.bin … data_batch_5.bin and test_batch.bin";

/// The records of the file at `path`, from its size: refused, naming
/// `field` and the file, when it is missing, not a regular file (a FIFO is
/// never opened), or not a whole, non-zero number of records.
pub fn records(field: &str, path: &Path) -> Result<usize, InputError> {
    let name = path.display();
    let meta = match crate::files::check_regular(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(InputError::new(
                field,
                format!("{name} is missing ({LAYOUT})"),
            ));
        }
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            return Err(InputError::new(field, format!("{name} {e}")));
        }
        Err(e) => {
            return Err(InputError::new(
                field,
                format!("{name} cannot be read: {e}"),
            ));
        }
    };
    let bytes = meta.len();
    if bytes == 0 {
        return Err(InputError::new(
            field,
            format!("{name} is 0 bytes: it holds no {RECORD_BYTES}-byte record"),
        ));
    }
    if bytes % RECORD_BYTES as u64 != 0 {
        return Err(InputError::new(
            field,
            format!("{name} is {bytes} bytes, not a whole number of {RECORD_BYTES}-byte records"),
        ));
    }
    usize::try_from(bytes / RECORD_BYTES as u64)
        .map_err(|_| InputError::new(field, format!("{name} is {bytes} bytes: too many records")))
}

/// The records of `files` together ([`records`] of each), refused when
/// they take more than `max_matrix_mib` as a dense matrix of f64 (a bogus
/// size is refused here, before anything is allocated for it).
pub fn count(field: &str, files: &[PathBuf], max_matrix_mib: usize) -> Result<usize, InputError> {
    let mut total: u128 = 0;
    for path in files {
        total += records(field, path)? as u128;
    }
    let matrix = total * IMAGE_BYTES as u128 * 8;
    let limit = max_matrix_mib as u128 * (1 << 20);
    if matrix > limit {
        let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        return Err(InputError::new(
            field,
            format!(
                "the {total} records of {} as a dense matrix of f64 take {} MiB, more than data.max_matrix_mib = {max_matrix_mib} (raise the limit only if the nodes have the memory)",
                names.join(", "),
                matrix.div_ceil(1 << 20)
            ),
        ));
    }
    // Within the limit, so within usize.
    Ok(total as usize)
}

/// What [`read_cifar`] kept: images and labels, in record order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CifarArray {
    /// The kept images, [`IMAGE_BYTES`] each.
    pub data: Vec<u8>,
    /// The label of each kept image.
    pub labels: Vec<u8>,
    /// Which records were kept (numbered across the files).
    pub kept: Vec<usize>,
}

impl CifarArray {
    /// Kept image `k` (in the order of [`Self::kept`]).
    pub fn item(&self, k: usize) -> &[u8] {
        &self.data[k * IMAGE_BYTES..(k + 1) * IMAGE_BYTES]
    }
}

/// Read `files` in turn as one sequence of records, keeping the images for
/// which `keep(i, image)` is true (the others are read and dropped; `keep`
/// sees every image, e.g. for statistics). Every file is read whole: one
/// whose size is not whole records, or that changes while it is read, is
/// refused, and so is a label that is not a CIFAR-10 class or not below
/// `classes` (`model.classes`), naming the file and the record (1-based
/// within its file) and its byte offset.
pub fn read_cifar(
    field: &str,
    files: &[PathBuf],
    classes: usize,
    mut keep: impl FnMut(usize, &[u8]) -> bool,
) -> Result<CifarArray, InputError> {
    let mut out = CifarArray {
        data: Vec::new(),
        labels: Vec::new(),
        kept: Vec::new(),
    };
    let mut record = [0u8; RECORD_BYTES];
    let mut first = 0usize;
    for path in files {
        let n = records(field, path)?;
        let name = path.display();
        let file = crate::files::open_input(path)
            .map_err(|e| InputError::new(field, format!("{name} cannot be read: {e}")))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        for r in 0..n {
            let at = r as u64 * RECORD_BYTES as u64;
            if let Err(e) = reader.read_exact(&mut record) {
                let why = if e.kind() == ErrorKind::UnexpectedEof {
                    "the file ends inside it (it changed while it was read)".to_string()
                } else {
                    format!("cannot be read: {e}")
                };
                return Err(InputError::new(
                    field,
                    format!("{name} record {} (byte {at}): {why}", r + 1),
                ));
            }
            let label = record[0];
            if label as usize >= CLASSES.min(classes) {
                let rule = if label as usize >= CLASSES {
                    format!("is not a CIFAR-10 class (0..={})", CLASSES - 1)
                } else {
                    format!("is not below model.classes = {classes}")
                };
                return Err(InputError::new(
                    field,
                    format!("{name} record {} (byte {at}): label {label} {rule}", r + 1),
                ));
            }
            let i = first + r;
            if keep(i, &record[1..]) {
                out.data.extend_from_slice(&record[1..]);
                out.labels.push(label);
                out.kept.push(i);
            }
        }
        let mut extra = [0u8; 1];
        match reader.read(&mut extra) {
            Ok(0) => {}
            Ok(_) => {
                return Err(InputError::new(
                    field,
                    format!(
                        "{name}: bytes after its {n} records (the file changed while it was read)"
                    ),
                ));
            }
            Err(e) => {
                return Err(InputError::new(
                    field,
                    format!("{name} cannot be read: {e}"),
                ));
            }
        }
        first += n;
    }
    Ok(out)
}

/// Write records of `labels` and `images` ([`IMAGE_BYTES`] each) as a
/// CIFAR-10 batch file at `path`. For tests and small slices of the set.
pub fn write_cifar(path: &Path, labels: &[u8], images: &[u8]) -> std::io::Result<()> {
    if images.len() != labels.len() * IMAGE_BYTES {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} bytes are not {} images of {IMAGE_BYTES}",
                images.len(),
                labels.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(labels.len() * RECORD_BYTES);
    for (label, image) in labels.iter().zip(images.chunks(IMAGE_BYTES)) {
        bytes.push(*label);
        bytes.extend_from_slice(image);
    }
    let mut file = File::create(path)?;
    file.write_all(&bytes)?;
    file.sync_all()
}

/// Small CIFAR-10 folders for the tests of the modules that read them.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use super::{IMAGE_BYTES, TEST_FILE, TRAIN_FILES, write_cifar};

    /// The id of test record `t`: training records are numbered from 0
    /// across the batches, test records from 100.
    pub const TEST_IDS: usize = 100;

    /// Pixel (c, y, x) of the image of record `id`: pixel (0, 0, 0) is the
    /// id, the others differ per channel (channel c in 80c ..= 80c + 59).
    pub fn pixel(id: usize, c: usize, y: usize, x: usize) -> u8 {
        if (c, y, x) == (0, 0, 0) {
            id as u8
        } else {
            (c * 80 + (id * 7 + y * 5 + x * 3) % 60) as u8
        }
    }

    pub fn label(id: usize) -> u8 {
        (id * 3 % 10) as u8
    }

    /// The image of record `id`, channel-major.
    pub fn image(id: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(IMAGE_BYTES);
        for c in 0..3 {
            for y in 0..32 {
                for x in 0..32 {
                    out.push(pixel(id, c, y, x));
                }
            }
        }
        out
    }

    /// A CIFAR-10 folder at `dir` whose five training batches and test
    /// batch hold `counts` records.
    pub fn write_folder(dir: &Path, counts: [usize; 6]) {
        std::fs::create_dir_all(dir).unwrap();
        let mut next = 0;
        for (i, file) in TRAIN_FILES.iter().chain([&TEST_FILE]).enumerate() {
            if i == 5 {
                next = TEST_IDS;
            }
            let ids: Vec<usize> = (next..next + counts[i]).collect();
            next += counts[i];
            let labels: Vec<u8> = ids.iter().map(|&id| label(id)).collect();
            let images: Vec<u8> = ids.iter().flat_map(|&id| image(id)).collect();
            write_cifar(&dir.join(file), &labels, &images).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(seed: u8) -> Vec<u8> {
        (0..IMAGE_BYTES)
            .map(|j| (j as u8).wrapping_mul(7).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn records_of_several_files_are_one_sequence() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.bin");
        let b = dir.path().join("b.bin");
        write_cifar(&a, &[3, 9], &[image(1), image(2)].concat()).unwrap();
        write_cifar(&b, &[0], &image(3)).unwrap();
        let files = [a, b];
        assert_eq!(count("data.path", &files, 4096).unwrap(), 3);
        let all = read_cifar("data.path", &files, 10, |_, _| true).unwrap();
        assert_eq!(all.labels, [3, 9, 0]);
        assert_eq!(all.kept, [0, 1, 2]);
        assert_eq!(all.item(2), image(3));
        let mut seen = Vec::new();
        let some = read_cifar("data.path", &files, 10, |i, img| {
            seen.push((i, img[0]));
            i == 1
        })
        .unwrap();
        assert_eq!(seen, [(0, 1), (1, 2), (2, 3)]);
        assert_eq!((some.kept, some.labels), (vec![1], vec![9]));
        assert_eq!(some.data, image(2));
    }

    #[test]
    fn bad_sizes_and_labels_name_the_field_the_file_and_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data_batch_3.bin");
        std::fs::write(&path, vec![0u8; 1000 * RECORD_BYTES + 1]).unwrap();
        let e = records("data.path", &path).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "data.path: {} is 3073001 bytes, not a whole number of 3073-byte records",
                path.display()
            )
        );
        std::fs::write(&path, b"").unwrap();
        let e = records("data.set", &path).unwrap_err().to_string();
        assert!(
            e.starts_with("data.set: ") && e.contains("is 0 bytes: it holds no 3073-byte record"),
            "{e}"
        );
        let missing = dir.path().join("data_batch_4.bin");
        let e = records("data.path", &missing).unwrap_err().to_string();
        assert!(
            e.contains("data_batch_4.bin is missing") && e.contains("test_batch.bin"),
            "{e}"
        );
        let e = records("data.path", dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a folder, not a regular file"), "{e}");
        // Record 2 of the second file has label 12.
        let a = dir.path().join("a.bin");
        write_cifar(&a, &[1], &image(0)).unwrap();
        write_cifar(&path, &[4, 12], &[image(0), image(1)].concat()).unwrap();
        let files = [a.clone(), path.clone()];
        let e = read_cifar("data.path", &files, 10, |_, _| true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "data.path: {} record 2 (byte 3073): label 12 is not a CIFAR-10 class (0..=9)",
                path.display()
            )
        );
        write_cifar(&path, &[4, 7], &[image(0), image(1)].concat()).unwrap();
        let e = read_cifar("data.path", &files, 5, |_, _| false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("record 2 (byte 3073): label 7 is not below model.classes = 5"),
            "{e}"
        );
    }

    /// Sizes are checked against `data.max_matrix_mib` before anything is
    /// read: a sparse file of 2^40 bytes (a few blocks on disk) is refused
    /// from its size.
    #[test]
    fn a_huge_file_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data_batch_1.bin");
        let file = File::create(&path).unwrap();
        let records = (1u64 << 40) / RECORD_BYTES as u64;
        file.set_len(records * RECORD_BYTES as u64).unwrap();
        let e = count("data.path", &[path], 4096).unwrap_err().to_string();
        assert!(
            e.starts_with("data.path: the 357797470 records of ")
                && e.contains("more than data.max_matrix_mib = 4096"),
            "{e}"
        );
        // 1 MiB holds 42 records' matrix (42 × 3072 × 8 = 1032192 bytes), not 43.
        let path = dir.path().join("small.bin");
        std::fs::write(&path, vec![0u8; 43 * RECORD_BYTES]).unwrap();
        assert!(count("data.path", std::slice::from_ref(&path), 1).is_err());
        std::fs::write(&path, vec![0u8; 42 * RECORD_BYTES]).unwrap();
        assert_eq!(count("data.path", &[path], 1).unwrap(), 42);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_being_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("data_batch_1.bin");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        let e = read_cifar("data.path", &[fifo], 10, |_, _| true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod cifar_files;
