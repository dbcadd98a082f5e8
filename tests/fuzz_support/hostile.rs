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

// ------------------------------------------------- structures beyond one blown-up dataset

/// How a [`Structure`] links objects in ways a gradcode trace never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `/loop/self` is a hard link to `/loop`: a group inside itself.
    SelfHard,
    /// `/loop/root` is a hard link to the root group.
    RootHard,
    /// `/loop/up` is a soft link to the root group.
    RootSoft,
    /// `/loop/dangling` is a soft link to nothing.
    Dangling,
    /// `/loop/ext` is a link to the root of another file (`/dev/zero`).
    External,
    /// `/notes/copy_<i>` are hard links to `/notes/big` (8 of them).
    DatasetCopies,
}

/// Every [`Link`].
pub const LINKS: [Link; 6] = [
    Link::SelfHard,
    Link::RootHard,
    Link::RootSoft,
    Link::Dangling,
    Link::External,
    Link::DatasetCopies,
];

/// A hostile trace file, structure first: the datasets of a run (or of a
/// simulation's trials) holding real values, of which some claim another
/// shape than the one written, cluster ids of any size, links that make
/// loops or leave the file, groups nested deep. [`build`] writes it with the
/// hdf5 crate; the fuzz harness derives one from bytes ([`Structure::from_bytes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Structure {
    /// `/sim/gc/trial_<k>` groups (k < trials) instead of a run at the root;
    /// trial k > 0 is a hard link to trial 0 when `linked_trials`.
    pub simulation: Option<(usize, bool)>,
    /// Rows written in every dataset of the schema.
    pub iterations: usize,
    pub workers: usize,
    /// (dataset of the table, by index, rows, columns) claimed after writing:
    /// a resize that HDF5 stores without writing a chunk.
    pub claims: Vec<(usize, usize, usize)>,
    /// `/worker/cluster`, row by row, cycled (empty: 1, 2, 1, 2, ...).
    pub cluster_ids: Vec<i64>,
    /// `/notes/big`: (rows claimed, rows written), when present.
    pub extra: Option<(usize, usize)>,
    pub links: Vec<Link>,
    /// Groups nested below `/deep` (0: none).
    pub depth: usize,
    /// A snapshot after the last iteration (`/model/theta` and
    /// `/model/previous_theta` of 2 parameters): a run `train --resume` reads.
    pub model: bool,
}

impl Structure {
    /// A valid trace of `iterations` × `workers`, nothing hostile.
    pub fn valid(iterations: usize, workers: usize) -> Self {
        Structure {
            simulation: None,
            iterations,
            workers,
            claims: Vec::new(),
            cluster_ids: Vec::new(),
            extra: None,
            links: Vec::new(),
            depth: 0,
            model: false,
        }
    }

    /// A structure from fuzz bytes: every byte string gives one, and every
    /// hostile shape, link and id above is a few bytes away.
    pub fn from_bytes(data: &[u8]) -> Self {
        // Rows: small, ordinary, and far beyond any file.
        const SIZES: [usize; 12] = [
            0,
            1,
            3,
            17,
            1000,
            1 << 16,
            1_000_000,
            1_000_000_000,
            2_000_000_000,
            1 << 31,
            1 << 33,
            1 << 40,
        ];
        const IDS: [i64; 10] = [
            -1,
            0,
            1,
            2,
            3,
            -2,
            1_000_000_000,
            1 << 62,
            i64::MAX,
            i64::MIN,
        ];
        let mut bytes = data.iter().copied();
        let mut next = move || bytes.next().unwrap_or(0);
        let flags = next();
        let mut s = Structure::valid(usize::from(next() % 9), 1 + usize::from(next() % 4));
        if flags & 1 != 0 {
            s.simulation = Some((1 + usize::from(next() % 4), flags & 2 != 0));
        }
        // Columns: up to 2·10^9 (the (3, 2·10^9) /worker/finish_s of issue 17).
        const COLUMNS: [usize; 8] = [0, 1, 3, 17, 1000, 1 << 16, 1_000_000, 2_000_000_000];
        for _ in 0..next() % 4 {
            let spec = usize::from(next()) % DATASETS.len();
            let columns = COLUMNS[usize::from(next()) % COLUMNS.len()];
            // At most 2^62 values: HDF5's sizes are 64-bit.
            let rows = SIZES[usize::from(next()) % SIZES.len()].min((1 << 62) / columns.max(1));
            s.claims.push((spec, rows, columns));
        }
        for _ in 0..next() % 4 {
            s.cluster_ids.push(IDS[usize::from(next()) % IDS.len()]);
        }
        if flags & 4 != 0 {
            let claimed = SIZES[usize::from(next()) % SIZES.len()];
            s.extra = Some((claimed, usize::from(next() % 64)));
        }
        for (i, link) in LINKS.iter().enumerate() {
            if u16::from(next()) & (1 << (i % 8)) != 0 && flags & 8 != 0 {
                s.links.push(*link);
            }
        }
        if flags & 16 != 0 {
            s.depth = [1, 8, 32, 33, 100, 600][usize::from(next()) % 6];
        }
        s.model = flags & 32 != 0;
        s
    }
}

fn attr_u64(loc: &hdf5::Location, name: &str, v: u64) {
    loc.new_attr::<u64>()
        .create(name)
        .unwrap()
        .write_scalar(&v)
        .unwrap();
}

/// A chunked dataset, resizable in every dimension, holding `values` as
/// `rows` × `columns` (`columns = None`: one dimension).
fn written<T: H5Type + Copy>(
    g: &Group,
    name: &str,
    values: &[T],
    rows: usize,
    columns: Option<usize>,
) -> Dataset {
    let b = g.new_dataset::<T>();
    let ds = match columns {
        None => b
            .chunk((64,))
            .shape((Extent::resizable(rows),))
            .create(name),
        Some(k) => b
            .chunk((16, k.clamp(1, 64)))
            .shape((Extent::resizable(rows), Extent::resizable(k)))
            .create(name),
    }
    .unwrap();
    if !values.is_empty() {
        ds.write_raw(values).unwrap();
    }
    ds
}

/// The datasets of the schema table in `g`: `n` rows of `k` workers,
/// every value real; then the claims of `s` resized over them.
fn schema_group(g: &Group, s: &Structure) {
    let (n, k) = (s.iterations, s.workers);
    let it = g.create_group("iteration").unwrap();
    let wk = g.create_group("worker").unwrap();
    for (index, spec) in DATASETS.iter().enumerate() {
        let (parent, columns, len) = match spec.group {
            SchemaGroup::Iteration => (&it, None, n),
            SchemaGroup::Worker => (&wk, Some(k), n * k),
        };
        let ds = match spec.element {
            ElementType::F64 => {
                let v: Vec<f64> = (0..len).map(|i| 0.25 + i as f64).collect();
                written(parent, spec.name, &v, n, columns)
            }
            ElementType::U64 => written(parent, spec.name, &vec![2u64; len], n, columns),
            ElementType::I64 => {
                let ids: Vec<i64> = (0..len)
                    .map(|i| {
                        if s.cluster_ids.is_empty() {
                            1 + (i % 2) as i64
                        } else {
                            s.cluster_ids[i % s.cluster_ids.len()]
                        }
                    })
                    .collect();
                written(parent, spec.name, &ids, n, columns)
            }
            ElementType::Flag => {
                let v: Vec<u8> = (0..len).map(|i| (i % 3 == 0) as u8).collect();
                written(parent, spec.name, &v, n, columns)
            }
        };
        string_attr(&ds, "unit", spec.unit);
        let claims: Vec<(usize, usize)> = s
            .claims
            .iter()
            .filter(|c| c.0 == index)
            .map(|&(_, rows, cols)| (rows, cols))
            .collect();
        claim(&ds, spec.group, (n, k), &claims);
    }
}

/// The dataset `ds`, written as `written` (rows, columns), resized to each
/// of `claims` in turn, in two steps with the same outcome: shrink to the
/// values every accepted claim keeps, then grow to the last accepted claim.
/// Resized one claim at a time, a shrink after a claim of 2^40 rows makes
/// HDF5 visit every chunk of the claimed extent (hours, as in one CI run);
/// the two steps only ever shrink what was written. HDF5 refuses some
/// extents (beyond its 2^64 bytes of address); a refused claim changes
/// nothing, as its resize would, which a probe tells beforehand.
fn claim(ds: &Dataset, group: SchemaGroup, written: (usize, usize), claims: &[(usize, usize)]) {
    let dims = |(rows, cols): (usize, usize)| match group {
        SchemaGroup::Iteration => vec![rows],
        SchemaGroup::Worker => vec![rows, cols],
    };
    let mut kept = written;
    let mut last = None;
    for &extent in claims {
        if accepts(ds, &dims(extent)) {
            kept = (kept.0.min(extent.0), kept.1.min(extent.1));
            last = Some(extent);
        }
    }
    if let Some(extent) = last {
        ds.resize(dims(kept)).unwrap();
        ds.resize(dims(extent)).unwrap();
    }
}

/// Whether HDF5 resizes a dataset of the type and chunks of `ds` to
/// `extent`: tried on an empty one in a file held in memory.
fn accepts(ds: &Dataset, extent: &[usize]) -> bool {
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = File::with_options()
        .with_fapl(|p| p.core_filebacked(false))
        .create(format!(
            "gradcode-extent-probe-{}-{n}.h5",
            std::process::id()
        ))
        .unwrap();
    let probe = file
        .new_dataset_builder()
        .empty_as(ds.dtype().unwrap())
        .chunk(ds.chunk().unwrap())
        .shape(hdf5::SimpleExtents::resizable(vec![0; extent.len()]))
        .create("probe")
        .unwrap();
    probe.resize(extent).is_ok()
}

/// Write the file of `s` at `path`.
pub fn build(path: &Path, s: &Structure) {
    let _ = std::fs::remove_file(path);
    let file = File::create(path).unwrap();
    string_attr(&file, "gradcode_version", env!("CARGO_PKG_VERSION"));
    string_attr(&file, "config_toml", "workers = 2\n");
    attr_u64(&file, "workers", s.workers as u64);
    attr_u64(&file, "seed", 1);
    match s.simulation {
        None => {
            string_attr(&file, "scheme", "gc");
            schema_group(&file, s);
        }
        Some((trials, linked)) => {
            string_attr(&file, "scheme", "gc");
            let scheme = file.create_group("sim/gc").unwrap();
            attr_u64(&scheme, "trials", trials as u64);
            let first = scheme.create_group("trial_0").unwrap();
            schema_group(&first, s);
            for t in 1..trials {
                if linked {
                    scheme
                        .link_hard("/sim/gc/trial_0", &format!("trial_{t}"))
                        .unwrap();
                } else {
                    schema_group(&scheme.create_group(&format!("trial_{t}")).unwrap(), s);
                }
            }
        }
    }
    if s.model {
        let model = file.create_group("model").unwrap();
        for name in ["theta", "previous_theta"] {
            let ds = written(&model, name, &[0.5f64, -0.5], 2, None);
            attr_u64(&ds, "iteration", s.iterations as u64);
        }
    }
    if let Some((claimed, rows)) = s.extra {
        let notes = file.create_group("notes").unwrap();
        let v: Vec<f64> = (0..rows).map(|i| i as f64).collect();
        let ds = written(&notes, "big", &v, rows, None);
        let _ = ds.resize((claimed,));
    }
    if !s.links.is_empty() {
        let lp = file.create_group("loop").unwrap();
        for link in &s.links {
            match link {
                Link::SelfHard => lp.link_hard("/loop", "self").unwrap(),
                Link::RootHard => lp.link_hard("/", "root").unwrap(),
                Link::RootSoft => lp.link_soft("/", "up").unwrap(),
                Link::Dangling => lp.link_soft("/nothing/here", "dangling").unwrap(),
                Link::External => lp.link_external("/dev/zero", "/", "ext").unwrap(),
                Link::DatasetCopies => {
                    let notes = if file.link_exists("notes") {
                        file.group("notes").unwrap()
                    } else {
                        file.create_group("notes").unwrap()
                    };
                    if !notes.link_exists("big") {
                        written(&notes, "big", &[1.0f64, 2.0, 3.0], 3, None);
                    }
                    for i in 0..8 {
                        notes.link_hard("/notes/big", &format!("copy_{i}")).unwrap();
                    }
                }
            }
        }
    }
    if s.depth > 0 {
        let mut g = file.create_group("deep").unwrap();
        for _ in 1..s.depth {
            g = g.create_group("d").unwrap();
        }
        attr_u64(&g, "level", s.depth as u64);
    }
    file.close().unwrap();
}
