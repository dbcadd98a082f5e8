//! Hostile trace files, built with the hdf5 crate alone: a small file
//! that looks like a trace of a run but one of whose datasets claims far
//! more rows than the file holds (a chunked, resizable dataset extended
//! without ever being written: HDF5 stores no chunk for it, so the file
//! stays a few kilobytes while reading it would allocate gigabytes).
//! Shared by tests/trace.rs (readers in process), tests/inspect.rs
//! (`gradcode inspect`) and the fuzz harness.

#![allow(dead_code)]

use std::path::Path;

use gradcode::trace::{DATASETS, ElementType, SchemaGroup};
use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Extent, File, Group, H5Type};

/// Rows a hostile dataset claims: 2^31 (16 GiB of f64).
pub const HOSTILE_ROWS: usize = 1 << 31;

/// Workers of a hostile trace.
pub const WORKERS: usize = 2;

/// The datasets [`hostile_trace`] can blow up, besides those of the schema
/// table: the model, a timing dataset, and one outside the schema.
pub const OTHER_TARGETS: [&str; 3] = ["model/theta", "timing/total_s", "notes/big"];

/// The target of [`hostile_trace`] that blows up every dataset of the
/// schema table alike: the shapes agree with each other, only their size
/// breaks a rule (the first the readers check is `iteration/duration_s`).
pub const EVERY_ROW: &str = "*";

fn string_attr(loc: &hdf5::Location, name: &str, value: &str) {
    let v: VarLenUnicode = value.parse().unwrap();
    loc.new_attr::<VarLenUnicode>()
        .create(name)
        .unwrap()
        .write_scalar(&v)
        .unwrap();
}

/// A chunked, resizable dataset with `rows` rows (`columns` columns when
/// given) of which only the first `written` are written (`value` each).
fn growing<T: H5Type + Copy>(
    g: &Group,
    name: &str,
    columns: Option<usize>,
    rows: usize,
    written: usize,
    value: T,
) -> Dataset {
    let b = g.new_dataset::<T>();
    let ds = match columns {
        None => b
            .chunk((16,))
            .shape((Extent::resizable(written),))
            .create(name),
        Some(k) => b
            .chunk((16, k.max(1)))
            .shape((Extent::resizable(written), Extent::fixed(k)))
            .create(name),
    }
    .unwrap();
    let k = columns.unwrap_or(1);
    if written > 0 {
        ds.write_raw(&vec![value; written * k]).unwrap();
    }
    match columns {
        None => ds.resize((rows,)).unwrap(),
        Some(k) => ds.resize((rows, k)).unwrap(),
    }
    ds
}

/// A trace of a run with no iteration yet and a snapshot at iteration 0
/// (root attributes, every dataset of the schema with 0 rows, `/model/theta`
/// and `/model/previous_theta` of 2 parameters, `/timing/` with one event),
/// in which the dataset `target` (a path of the schema table, one of
/// [`OTHER_TARGETS`], or [`EVERY_ROW`]), if any, claims `rows` rows and is
/// never written beyond what the valid trace has. With `target = None` it is a valid
/// trace that `inspect` reads and `train --resume` continues.
pub fn hostile_trace(path: &Path, target: Option<&str>, rows: usize) {
    let _ = std::fs::remove_file(path);
    let file = File::create(path).unwrap();
    string_attr(&file, "scheme", "gc");
    string_attr(&file, "config_toml", "workers = 2\n");
    string_attr(&file, "gradcode_version", env!("CARGO_PKG_VERSION"));
    for (name, v) in [("workers", WORKERS as u64), ("seed", 1)] {
        file.new_attr::<u64>()
            .create(name)
            .unwrap()
            .write_scalar(&v)
            .unwrap();
    }
    let rows_of = |path: &str, valid: usize| {
        if target == Some(path)
            || (target == Some(EVERY_ROW) && DATASETS.iter().any(|d| d.path == path))
        {
            rows
        } else {
            valid
        }
    };
    let it = file.create_group("iteration").unwrap();
    let wk = file.create_group("worker").unwrap();
    for spec in DATASETS {
        let (g, columns) = match spec.group {
            SchemaGroup::Iteration => (&it, None),
            SchemaGroup::Worker => (&wk, Some(WORKERS)),
        };
        let n = rows_of(spec.path, 0);
        let ds = match spec.element {
            ElementType::F64 => growing(g, spec.name, columns, n, 0, 0.0f64),
            ElementType::U64 => growing(g, spec.name, columns, n, 0, 0u64),
            ElementType::I64 => growing(g, spec.name, columns, n, 0, 0i64),
            ElementType::Flag => growing(g, spec.name, columns, n, 0, 0u8),
        };
        string_attr(&ds, "unit", spec.unit);
        string_attr(&ds, "description", spec.description);
    }
    let model = file.create_group("model").unwrap();
    for name in ["theta", "previous_theta"] {
        let n = rows_of(&format!("model/{name}"), 2);
        let ds = growing(&model, name, None, n, 2, 0.5f64);
        ds.new_attr::<u64>()
            .create("iteration")
            .unwrap()
            .write_scalar(&0)
            .unwrap();
    }
    let timing = file.create_group("timing").unwrap();
    let event: Vec<VarLenUnicode> = vec!["decode".parse().unwrap()];
    timing
        .new_dataset_builder()
        .with_data(&event)
        .create("event")
        .unwrap();
    growing(
        &timing,
        "total_s",
        None,
        rows_of("timing/total_s", 1),
        1,
        0.25f64,
    );
    growing(&timing, "count", None, rows_of("timing/count", 1), 1, 3u64);
    if target == Some("notes/big") {
        let notes = file.create_group("notes").unwrap();
        growing(&notes, "big", None, rows, 1, 1.0f64);
    }
    file.close().unwrap();
}
