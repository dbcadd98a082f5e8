//! The IDX file format of MNIST and Fashion-MNIST (LeCun et al.), raw or
//! gzip-compressed.
//!
//! An IDX file is a header — two zero bytes, a type byte, the number of
//! dimensions `n`, then `n` big-endian `u32` sizes — followed by the items,
//! the first dimension being the item index. Images are `u8` arrays of
//! `items × rows × columns` (idx3), labels `u8` arrays of `items` (idx1).
//! Only the `u8` type (0x08) is read: it is the type of every file of both
//! data sets. A file whose first two bytes are gzip's magic number is read
//! through a decompressor: every member of a multi-member file (gzip files
//! concatenated, as `cat a.gz b.gz` makes) in turn, each member's CRC
//! checked at its end; bytes after the last member that are not a gzip
//! member are an error.
//!
//! A header is checked against the file before anything is allocated in
//! proportion to what it declares: its items as a dense matrix of f64
//! (items × the other sizes × 8 bytes) must fit in `data.max_matrix_mib`
//! (which also bounds the per-item bookkeeping of the image sets, 8 bytes an
//! item); a raw file's size must be the header's plus the items' bytes; a
//! gzip file is read as a stream, which stops at the first byte beyond the
//! declared items and refuses a stream that ends before them.
//!
//! Every error names the file and the byte offset where the file stops
//! being what its header says (in the decompressed stream for gzip files).

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::path::Path;

use crate::error::InputError;

/// The IDX type byte of unsigned bytes.
const TYPE_U8: u8 = 0x08;

/// Bytes of the header before the sizes.
const MAGIC_BYTES: usize = 4;

/// The most dimensions a file may declare (the format's limit is 255; MNIST
/// uses 1 and 3).
const MAX_DIMS: usize = 4;

/// What an IDX file holds: its sizes, and the items a reader kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// The sizes of the file's dimensions: items first.
    pub dims: Vec<usize>,
    /// Bytes per item (the product of the sizes after the first).
    pub item_bytes: usize,
    /// The kept items, in file order, `item_bytes` each.
    pub data: Vec<u8>,
    /// Which items were kept, in file order.
    pub kept: Vec<usize>,
}

impl IdxArray {
    /// Items in the file.
    pub fn items(&self) -> usize {
        self.dims[0]
    }

    /// Kept item `k` (in the order of [`Self::kept`]).
    pub fn item(&self, k: usize) -> &[u8] {
        &self.data[k * self.item_bytes..(k + 1) * self.item_bytes]
    }
}

/// A reader that counts the bytes it has passed on.
struct Counting<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// An IDX file opened and its header checked ([`Opened::open`]): the items follow.
struct Opened {
    name: String,
    reader: Counting<Box<dyn Read>>,
    /// " of the decompressed data" for gzip files.
    place: &'static str,
    dims: Vec<usize>,
    item_bytes: usize,
}

impl Opened {
    fn fail(&self, offset: u64, rule: impl std::fmt::Display) -> InputError {
        InputError::new(&self.name, format!("byte {offset}{}: {rule}", self.place))
    }

    fn read_err(&self, offset: u64, e: std::io::Error, what: &str) -> InputError {
        if e.kind() == ErrorKind::UnexpectedEof {
            self.fail(offset, format!("the file ends inside {what}"))
        } else {
            self.fail(offset, format!("cannot read {what}: {e}"))
        }
    }

    /// Open the file at `path` and read its header, refusing one whose
    /// items, as a dense f64 matrix, take more than `max_matrix_mib` MiB, and
    /// a raw file whose size is not what the header declares.
    fn open(path: &Path, max_matrix_mib: usize) -> Result<Self, InputError> {
        let name = path.display().to_string();
        let file = crate::files::open_input(path)
            .map_err(|e| InputError::new(&name, format!("cannot open: {e}")))?;
        let file_bytes = file
            .metadata()
            .map_err(|e| InputError::new(&name, format!("cannot read: {e}")))?
            .len();
        let mut raw = BufReader::with_capacity(1 << 16, file);
        let mut magic = [0u8; 2];
        let gzip = match raw.read_exact(&mut magic) {
            Ok(()) => magic == [0x1f, 0x8b],
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                return Err(InputError::new(
                    &name,
                    "byte 0: the file ends before the IDX header (4 bytes)",
                ));
            }
            Err(e) => return Err(InputError::new(&name, format!("cannot read: {e}"))),
        };
        let chained = std::io::Cursor::new(magic).chain(raw);
        let (inner, place): (Box<dyn Read>, &str) = if gzip {
            (
                Box::new(flate2::read::MultiGzDecoder::new(chained)),
                " of the decompressed data",
            )
        } else {
            (Box::new(chained), "")
        };
        let mut opened = Opened {
            name,
            reader: Counting { inner, offset: 0 },
            place,
            dims: Vec::new(),
            item_bytes: 0,
        };
        opened.read_header()?;
        opened.check_claim(max_matrix_mib, (!gzip).then_some(file_bytes))?;
        Ok(opened)
    }

    /// Read the header after the file's start: the magic bytes, the
    /// dimensions and their sizes, which give `dims` and `item_bytes`.
    fn read_header(&mut self) -> Result<(), InputError> {
        let mut head = [0u8; MAGIC_BYTES];
        if let Err(e) = self.reader.read_exact(&mut head) {
            return Err(self.read_err(self.reader.offset, e, "the IDX header"));
        }
        if head[0] != 0 || head[1] != 0 {
            return Err(self.fail(
                0,
                format!(
                    "not an IDX file: it starts with {:#04x} {:#04x}, not two zero bytes",
                    head[0], head[1]
                ),
            ));
        }
        if head[2] != TYPE_U8 {
            return Err(self.fail(
                2,
                format!(
                    "IDX type {:#04x} is not read; only unsigned bytes (0x08, the type of MNIST's files)",
                    head[2]
                ),
            ));
        }
        let ndims = head[3] as usize;
        if ndims == 0 || ndims > MAX_DIMS {
            return Err(self.fail(
                3,
                format!("{ndims} dimensions: an IDX file of items has 1 to {MAX_DIMS}"),
            ));
        }
        for i in 0..ndims {
            let mut size = [0u8; 4];
            if let Err(e) = self.reader.read_exact(&mut size) {
                return Err(self.read_err(self.reader.offset, e, "the IDX header's sizes"));
            }
            let size = u32::from_be_bytes(size) as usize;
            if i > 0 && size == 0 {
                return Err(self.fail(
                    (MAGIC_BYTES + 4 * i) as u64,
                    format!("dimension {} has size 0", i + 1),
                ));
            }
            self.dims.push(size);
        }
        self.item_bytes = self.dims[1..]
            .iter()
            .try_fold(1usize, |acc, &s| acc.checked_mul(s))
            .filter(|&b| b <= 1 << 30)
            .ok_or_else(|| self.fail(MAGIC_BYTES as u64, "items larger than 1 GiB"))?;
        Ok(())
    }

    /// The header's claim against `data.max_matrix_mib` and, for a raw
    /// file, against its size (`raw_bytes`): refused before any item is read.
    fn check_claim(&self, max_matrix_mib: usize, raw_bytes: Option<u64>) -> Result<(), InputError> {
        let items = self.dims[0] as u128;
        let matrix = items * self.item_bytes as u128 * 8;
        let limit = max_matrix_mib as u128 * (1 << 20);
        if matrix > limit {
            let sizes: Vec<String> = self.dims.iter().map(usize::to_string).collect();
            return Err(self.fail(
                MAGIC_BYTES as u64,
                format!(
                    "the header declares {} items of {} bytes ({}), as a dense matrix of f64 {} MiB, more than data.max_matrix_mib = {max_matrix_mib} (a corrupted header, or raise the limit if the nodes have the memory)",
                    self.dims[0],
                    self.item_bytes,
                    sizes.join(" x "),
                    matrix.div_ceil(1 << 20)
                ),
            ));
        }
        let Some(file_bytes) = raw_bytes else {
            return Ok(());
        };
        let header = (MAGIC_BYTES + 4 * self.dims.len()) as u128;
        let item = self.item_bytes as u128;
        let expected = header + items * item;
        let file_bytes = file_bytes as u128;
        let sizes = format!("the file has {file_bytes} bytes, its header declares {expected}");
        if file_bytes < expected {
            // The item the file ends inside (1-based), where the stream read would stop.
            let whole = (file_bytes - header.min(file_bytes)) / item;
            return Err(self.fail(
                (header + whole * item) as u64,
                format!(
                    "the file ends inside item {} of the {items} its header declares ({sizes})",
                    whole + 1
                ),
            ));
        }
        if file_bytes > expected {
            return Err(self.fail(
                expected as u64,
                format!(
                    "bytes after the {items} items its header declares (a different file or a corrupted header; {sizes})"
                ),
            ));
        }
        Ok(())
    }
}

/// The sizes in the header of the IDX file at `path` (items first), read
/// without reading the items, checked against `max_matrix_mib` and, for a
/// raw file, against its size (a gzip file is checked whole when it is
/// read, [`read_idx`]).
pub fn idx_header(path: &Path, max_matrix_mib: usize) -> Result<Vec<usize>, InputError> {
    Opened::open(path, max_matrix_mib).map(|o| o.dims)
}

/// Read the IDX file at `path`, keeping the items for which `keep(i, item)`
/// is true (the others are read and dropped, so memory holds only kept
/// items; `keep` sees every item, e.g. to compute statistics in the pass).
/// The whole file is always read: a truncated file, trailing bytes or a
/// gzip CRC mismatch are errors whichever items are kept. A header that
/// declares more than `max_matrix_mib` allows is refused before any item is
/// read ([`idx_header`]).
pub fn read_idx(
    path: &Path,
    max_matrix_mib: usize,
    mut keep: impl FnMut(usize, &[u8]) -> bool,
) -> Result<IdxArray, InputError> {
    let mut o = Opened::open(path, max_matrix_mib)?;
    let items = o.dims[0];
    let mut data = Vec::new();
    let mut kept = Vec::new();
    let mut item = vec![0u8; o.item_bytes];
    for i in 0..items {
        let at = o.reader.offset;
        if let Err(e) = o.reader.read_exact(&mut item) {
            return Err(o.read_err(
                at,
                e,
                &format!("item {} of the {items} its header declares", i + 1),
            ));
        }
        if keep(i, &item) {
            data.extend_from_slice(&item);
            kept.push(i);
        }
    }
    let end = o.reader.offset;
    let mut extra = [0u8; 1];
    match o.reader.read(&mut extra) {
        Ok(0) => {}
        Ok(_) => {
            return Err(o.fail(
                end,
                format!(
                    "bytes after the {items} items its header declares (a different file or a corrupted header)"
                ),
            ));
        }
        // The gzip decoder checks each member's CRC and length at its end,
        // then parses what follows as the next member.
        Err(e) => {
            return Err(o.fail(
                end,
                format!(
                    "the compressed data is corrupted, or bytes that are not a gzip member follow the last one: {e}"
                ),
            ));
        }
    }
    Ok(IdxArray {
        dims: o.dims,
        item_bytes: o.item_bytes,
        data,
        kept,
    })
}

/// Write `data` (items of `dims[1..]`, `u8`) as an IDX file at `path`,
/// gzip-compressed when `gzip`. For tests and small slices of a data set.
pub fn write_idx(path: &Path, dims: &[usize], data: &[u8], gzip: bool) -> std::io::Result<()> {
    let expected: usize = dims.iter().product();
    if dims.is_empty() || dims.len() > MAX_DIMS || expected != data.len() {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            format!("{} bytes do not fill the sizes {dims:?}", data.len()),
        ));
    }
    let mut bytes = vec![0, 0, TYPE_U8, dims.len() as u8];
    for &d in dims {
        let d = u32::try_from(d)
            .map_err(|_| std::io::Error::new(ErrorKind::InvalidInput, "size beyond u32"))?;
        bytes.extend_from_slice(&d.to_be_bytes());
    }
    bytes.extend_from_slice(data);
    let file = File::create(path)?;
    if gzip {
        let mut enc = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        enc.write_all(&bytes)?;
        enc.finish()?.sync_all()
    } else {
        let mut file = file;
        file.write_all(&bytes)?;
        file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data.max_matrix_mib`'s default.
    const LIMIT: usize = 4096;

    fn images(n: usize) -> Vec<u8> {
        (0..n * 3 * 2).map(|i| (i * 37 % 251) as u8).collect()
    }

    #[test]
    fn round_trips_raw_and_gzip() {
        let dir = tempfile::tempdir().unwrap();
        for gzip in [false, true] {
            let path = dir.path().join(format!("x{gzip}.idx"));
            let data = images(5);
            write_idx(&path, &[5, 3, 2], &data, gzip).unwrap();
            let all = read_idx(&path, LIMIT, |_, _| true).unwrap();
            assert_eq!(all.dims, [5, 3, 2]);
            assert_eq!(all.data, data);
            let some = read_idx(&path, LIMIT, |i, _| i % 2 == 1).unwrap();
            assert_eq!(some.kept, [1, 3]);
            assert_eq!(some.item(1), &data[18..24]);
        }
    }

    #[test]
    fn truncated_and_corrupted_files_name_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.idx");
        write_idx(&path, &[5, 3, 2], &images(5), false).unwrap();
        let full = std::fs::read(&path).unwrap();
        // 16-byte header, then 6-byte items: cut inside item 4 (offset 34).
        std::fs::write(&path, &full[..37]).unwrap();
        let e = read_idx(&path, LIMIT, |_, _| true).unwrap_err().to_string();
        assert!(
            e.contains("x.idx") && e.contains("byte 34") && e.contains("item 4 of the 5"),
            "{e}"
        );
        std::fs::write(&path, [&full[..], &[7u8]].concat()).unwrap();
        let e = read_idx(&path, LIMIT, |_, _| true).unwrap_err().to_string();
        assert!(
            e.contains("byte 46") && e.contains("bytes after the 5 items"),
            "{e}"
        );
        let mut bad = full.clone();
        bad[2] = 0x0d;
        std::fs::write(&path, &bad).unwrap();
        let e = read_idx(&path, LIMIT, |_, _| true).unwrap_err().to_string();
        assert!(e.contains("byte 2") && e.contains("IDX type 0x0d"), "{e}");

        let gz = dir.path().join("x.idx.gz");
        write_idx(&gz, &[5, 3, 2], &images(5), true).unwrap();
        let mut bytes = std::fs::read(&gz).unwrap();
        let n = bytes.len();
        bytes[n - 6] ^= 0xff; // inside the CRC
        std::fs::write(&gz, &bytes).unwrap();
        let e = read_idx(&gz, LIMIT, |_, _| true).unwrap_err().to_string();
        assert!(
            e.contains("x.idx.gz") && e.contains("byte 46 of the decompressed data"),
            "{e}"
        );
        std::fs::write(&gz, &bytes[..n / 2]).unwrap();
        let e = read_idx(&gz, LIMIT, |_, _| true).unwrap_err().to_string();
        assert!(
            e.contains("of the decompressed data") && e.contains("ends inside"),
            "{e}"
        );
    }

    /// An IDX header of `dims` (u8 items), followed by nothing.
    fn header(dims: &[u32]) -> Vec<u8> {
        let mut bytes = vec![0, 0, TYPE_U8, dims.len() as u8];
        for d in dims {
            bytes.extend_from_slice(&d.to_be_bytes());
        }
        bytes
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    /// Headers that declare more than the file holds, or than
    /// `data.max_matrix_mib` allows, are refused from the header and the
    /// file's size, before any item is read or anything allocated for them
    /// (a process under a 1 GiB address-space limit would otherwise abort:
    /// 2^31 items of 8-byte indices are 16 GiB).
    #[test]
    fn a_header_is_checked_against_the_limit_and_the_file_size_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.idx");
        let mut bytes = header(&[1 << 31, 1, 1]);
        bytes.extend(std::iter::repeat_n(0u8, 1000));
        for gz in [false, true] {
            let written = if gz { gzip(&bytes) } else { bytes.clone() };
            std::fs::write(&path, written).unwrap();
            // 2^31 items x 1 x 1 x 8 bytes = 16384 MiB > 4096.
            let e = idx_header(&path, LIMIT).unwrap_err().to_string();
            assert!(
                e.contains("bomb.idx")
                    && e.contains("byte 4")
                    && e.contains("2147483648 items of 1 bytes (2147483648 x 1 x 1)")
                    && e.contains("16384 MiB, more than data.max_matrix_mib = 4096"),
                "{e}"
            );
            let e = read_idx(&path, LIMIT, |_, _| true).unwrap_err().to_string();
            assert!(e.contains("more than data.max_matrix_mib"), "{e}");
        }
        // 28 x 28 images: 2^31 x 784 x 8 bytes.
        std::fs::write(&path, header(&[1 << 31, 28, 28])).unwrap();
        let e = idx_header(&path, LIMIT).unwrap_err();
        assert!(e.to_string().contains("12845056 MiB"), "{e}");
        // 60000 x 100000 x 100000: items of 10^10 bytes.
        std::fs::write(&path, header(&[60000, 100000, 100000])).unwrap();
        let e = idx_header(&path, LIMIT).unwrap_err().to_string();
        assert!(e.contains("items larger than 1 GiB"), "{e}");
        // Within the limit, a raw file's size must be the header's claim:
        // 2^31 x 1 x 1 declares 2^31 + 16 bytes, the file has 1016.
        bytes.truncate(16 + 1000);
        std::fs::write(&path, &bytes).unwrap();
        let e = idx_header(&path, 1 << 15).unwrap_err().to_string();
        assert!(
            e.contains("byte 1016")
                && e.contains("ends inside item 1001 of the 2147483648")
                && e.contains("the file has 1016 bytes, its header declares 2147483664"),
            "{e}"
        );
        // Exactly the declared size passes, one byte more does not.
        let five = header(&[5, 3, 2]);
        std::fs::write(&path, [&five[..], &images(5)].concat()).unwrap();
        assert_eq!(idx_header(&path, LIMIT).unwrap(), [5, 3, 2]);
        std::fs::write(&path, [&five[..], &images(5), &[0]].concat()).unwrap();
        let e = idx_header(&path, LIMIT).unwrap_err().to_string();
        assert!(
            e.contains("byte 46") && e.contains("bytes after the 5 items"),
            "{e}"
        );
        // The limit is the f64 matrix: 5 x 6 x 8 = 240 bytes fit in 1 MiB.
        std::fs::write(&path, [&five[..], &images(5)].concat()).unwrap();
        assert!(read_idx(&path, 1, |_, _| true).is_ok());
    }

    /// A gzip file's claim is checked by reading it: the read stops at the
    /// first byte beyond the declared items (however much more the stream
    /// holds), and a stream that ends before them is refused.
    #[test]
    fn a_gzip_stream_is_read_no_further_than_its_header_declares() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.idx.gz");
        // Declares 5 items of 6 bytes, holds 64 MiB more: refused at byte 46
        // after reading one byte past it.
        let mut bytes = [&header(&[5, 3, 2])[..], &images(5)].concat();
        bytes.extend(std::iter::repeat_n(1u8, 64 << 20));
        std::fs::write(&path, gzip(&bytes)).unwrap();
        let mut seen = 0;
        let e = read_idx(&path, LIMIT, |_, _| {
            seen += 1;
            true
        })
        .unwrap_err()
        .to_string();
        assert_eq!(seen, 5);
        assert!(
            e.contains("byte 46 of the decompressed data") && e.contains("bytes after the 5 items"),
            "{e}"
        );
        // Declares 1000 items, holds 5: refused where the stream ends.
        let short = [&header(&[1000, 3, 2])[..], &images(5)].concat();
        std::fs::write(&path, gzip(&short)).unwrap();
        let e = read_idx(&path, LIMIT, |_, _| false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("byte 46 of the decompressed data")
                && e.contains("ends inside item 6 of the 1000"),
            "{e}"
        );
    }

    /// A gzip file of several members (files concatenated) is read whole,
    /// whatever byte a member ends at; bytes after the last member that are
    /// not a gzip member are refused, in one line naming the file.
    #[test]
    fn multi_member_gzip_is_read_and_trailing_garbage_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.idx.gz");
        let data = images(5);
        let whole = [&header(&[5, 3, 2])[..], &data].concat();
        for cut in [1, 16, 25, 45] {
            let two = [gzip(&whole[..cut]), gzip(&whole[cut..])].concat();
            std::fs::write(&path, &two).unwrap();
            let read = read_idx(&path, LIMIT, |_, _| true).unwrap();
            assert_eq!(read.data, data, "members split at byte {cut}");
        }
        let three = [gzip(&whole[..10]), gzip(&[]), gzip(&whole[10..])].concat();
        std::fs::write(&path, &three).unwrap();
        assert_eq!(read_idx(&path, LIMIT, |_, _| true).unwrap().data, data);
        for garbage in [&b"garbage after the member"[..], &[0u8; 4], &[0x1f]] {
            std::fs::write(&path, [&gzip(&whole)[..], garbage].concat()).unwrap();
            let e = read_idx(&path, LIMIT, |_, _| false)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!(
                    "{}: byte 46 of the decompressed data",
                    path.display()
                )) && e.contains("not a gzip member")
                    && !e.contains('\n'),
                "{garbage:?}: {e}"
            );
        }
    }
}
