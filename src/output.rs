//! Result output in one of several formats, written to any `Write` so tests
//! need no disk.

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
    Ndjson,
    Parquet,
}

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("writing the result")]
    Io(#[from] std::io::Error),
}

/// View types become their plain forms; for CSV, nested columns become text.
fn normalize(batch: &RecordBatch, flatten_nested: bool) -> Result<RecordBatch, ArrowError> {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        let (ty, col): (DataType, ArrayRef) = match c.data_type() {
            DataType::Utf8View | DataType::LargeUtf8 => (DataType::Utf8, cast(c, &DataType::Utf8)?),
            DataType::BinaryView | DataType::LargeBinary => {
                (DataType::Binary, cast(c, &DataType::Binary)?)
            }
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::Struct(_)
            | DataType::Map(_, _)
                if flatten_nested =>
            {
                let fmt = ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default())?;
                let text: StringArray = (0..c.len())
                    .map(|i| c.is_valid(i).then(|| fmt.value(i).to_string()))
                    .collect();
                (DataType::Utf8, Arc::new(text))
            }
            other => (other.clone(), c.clone()),
        };
        fields.push(Field::new(f.name(), ty, f.is_nullable()));
        columns.push(col);
    }
    // The row count is given: a statement's result may have no columns.
    let options =
        arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)
}

/// How much of a result the table format shows: a terminal is no place for
/// a million rows or a transcript in one cell. `None` shows all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableCap {
    /// Rows shown; the rest are counted.
    pub rows: Option<usize>,
    /// Characters of one cell shown; the rest are counted in a mark.
    pub chars: Option<usize>,
}

/// `batch` as the text the table shows, each cell cut to `chars`
/// characters (at a character boundary) with a mark of what it left out;
/// and how many cells were cut. Only the cut text is kept.
fn cut_cells(
    batch: &RecordBatch,
    chars: Option<usize>,
) -> Result<(RecordBatch, usize), ArrowError> {
    let mut cut = 0;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        let fmt = ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default())?;
        let text: StringArray = (0..c.len())
            .map(|i| {
                c.is_valid(i).then(|| {
                    let cell = fmt.value(i).to_string();
                    match chars.and_then(|n| cell.char_indices().nth(n)) {
                        Some((at, _)) => {
                            cut += 1;
                            let left = cell[at..].chars().count();
                            format!("{}… (+{left} chars)", &cell[..at])
                        }
                        None => cell,
                    }
                })
            })
            .collect();
        fields.push(Field::new(f.name(), DataType::Utf8, true));
        columns.push(Arc::new(text));
    }
    let options =
        arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    let batch =
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
    Ok((batch, cut))
}

/// A writer that remembers the kind of the first I/O error it returned:
/// arrow's CSV writer reports one as text, and whoever reads our error must
/// still tell a reader that went away (`BrokenPipe`) from a full disk.
struct Watched<W> {
    inner: W,
    failed: Arc<Mutex<Option<std::io::ErrorKind>>>,
}

impl<W: Write> Watched<W> {
    fn note<T>(&self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert(e.kind());
        }
        r
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        self.note(r)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

/// Write `batches` to `w` in `format`, every row. A failed write of `w` is
/// an [`OutputError::Io`] of its kind, whichever writer met it.
pub fn write_batches<W: Write + Send>(
    w: W,
    batches: &[RecordBatch],
    format: Format,
) -> Result<(), OutputError> {
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| Arc::new(Schema::empty()));
    let mut out = ResultWriter::new(w, format, &schema, TableCap::default())?;
    for b in batches {
        out.write(b)?;
    }
    out.finish().map(|_| ())
}

/// What a [`ResultWriter`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Every row of the result.
    pub rows: usize,
    /// Rows the table format left out (beyond its row cap).
    pub not_shown: usize,
    /// Cells the table format cut (beyond its character cap).
    pub cells_cut: usize,
}

/// The most a lake row group holds, in Parquet's estimate of its encoded
/// size. A writer holds its whole row group until the group ends, and
/// Parquet's default ends one only at 1M rows, so a write's memory grew with
/// its table (`sft_mix`, the products, a compaction). 4 MB keeps that term
/// fixed and leaves compressed groups that scan as fast as whole files;
/// smaller groups made the lake larger and scans slower (bench/README.md).
pub const ROW_GROUP_BYTES: usize = 4 << 20;

/// Columns whose values are nearly all distinct: digests, transcripts,
/// commands. A dictionary there only costs time (it fills and is dropped
/// in every row group), and values written back to back, their lengths
/// apart, compress better: hex digits in about 4 bits each.
/// (A list's values are `item` as Arrow names them, `element` as Parquet does.)
const DISTINCT_VALUE_COLUMNS: [&[&str]; 7] = [
    &["content_sha"],
    &["turn_sha"],
    &["traj_sha"],
    &["content"],
    &["command"],
    &["commands", "list", "item"],
    &["commands", "list", "element"],
];

/// The digests among them: random hex, with no repeats for zstd's match
/// search to find. Its fastest level codes the digits as well (their
/// entropy is all there is to gain) in about half the time of level 3.
const DIGEST_COLUMNS: [&str; 3] = ["content_sha", "turn_sha", "traj_sha"];

/// How turnlake writes Parquet, the lake's files and `sql --out` alike: zstd
/// (transcripts compress several times over, far better than the default
/// snappy) with dictionaries for the many repeated values (sources, kinds,
/// ids within a file), except where values are distinct; in row groups of at most
/// [`ROW_GROUP_BYTES`].
pub fn parquet_properties() -> parquet::file::properties::WriterProperties {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::schema::types::ColumnPath;
    let zstd = |level| Compression::ZSTD(ZstdLevel::try_new(level).expect("a zstd level"));
    let mut builder = parquet::file::properties::WriterProperties::builder()
        .set_compression(zstd(3))
        .set_dictionary_enabled(true)
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES));
    for path in DISTINCT_VALUE_COLUMNS {
        let column = ColumnPath::new(path.iter().map(|p| p.to_string()).collect());
        builder = builder
            .set_column_dictionary_enabled(column.clone(), false)
            .set_column_encoding(column, parquet::basic::Encoding::DELTA_LENGTH_BYTE_ARRAY);
    }
    for name in DIGEST_COLUMNS {
        builder = builder.set_column_compression(ColumnPath::from(name), zstd(1));
    }
    builder.build()
}

/// A result written batch by batch as it arrives, so it need not fit in
/// memory: only the table format keeps rows, and only the ones it shows.
pub struct ResultWriter<W: Write + Send> {
    sink: Sink<Watched<W>>,
    failed: Arc<Mutex<Option<std::io::ErrorKind>>>,
    written: Written,
}

enum Sink<W: Write + Send> {
    Table {
        w: W,
        schema: arrow::datatypes::SchemaRef,
        shown: Vec<RecordBatch>,
        cap: TableCap,
    },
    Csv(arrow::csv::Writer<W>),
    Json(arrow::json::ArrayWriter<W>),
    Ndjson(arrow::json::LineDelimitedWriter<W>),
    Parquet(parquet::arrow::ArrowWriter<W>),
}

impl<W: Write + Send> ResultWriter<W> {
    /// A writer of rows of `schema` to `w`; the table format shows what
    /// `cap` allows and counts the rest.
    pub fn new(
        w: W,
        format: Format,
        schema: &arrow::datatypes::SchemaRef,
        cap: TableCap,
    ) -> Result<Self, OutputError> {
        let failed = Arc::new(Mutex::new(None));
        let w = Watched {
            inner: w,
            failed: Arc::clone(&failed),
        };
        let flatten = format == Format::Csv;
        let schema = normalize(&RecordBatch::new_empty(Arc::clone(schema)), flatten)?.schema();
        let sink = match format {
            Format::Table => Sink::Table {
                w,
                schema,
                shown: Vec::new(),
                cap,
            },
            Format::Csv => Sink::Csv(arrow::csv::WriterBuilder::new().with_header(true).build(w)),
            Format::Json => Sink::Json(arrow::json::ArrayWriter::new(w)),
            Format::Ndjson => Sink::Ndjson(arrow::json::LineDelimitedWriter::new(w)),
            Format::Parquet => {
                // Row groups of bounded bytes: a long result is not held
                // whole in the writer.
                let props = parquet_properties();
                let pw = parquet::arrow::ArrowWriter::try_new(w, schema, Some(props));
                Sink::Parquet(pw?)
            }
        };
        Ok(ResultWriter {
            sink,
            failed,
            written: Written {
                rows: 0,
                not_shown: 0,
                cells_cut: 0,
            },
        })
    }

    /// Write the rows of `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), OutputError> {
        let r = self.write_inner(batch);
        self.with_kind(r)
    }

    fn write_inner(&mut self, batch: &RecordBatch) -> Result<(), OutputError> {
        self.written.rows += batch.num_rows();
        match &mut self.sink {
            Sink::Table { shown, cap, .. } => {
                let have: usize = shown.iter().map(|b| b.num_rows()).sum();
                let room = cap
                    .rows
                    .map_or(batch.num_rows(), |c| c.saturating_sub(have));
                let keep = room.min(batch.num_rows());
                if keep > 0 {
                    let (text, cut) = cut_cells(&batch.slice(0, keep), cap.chars)?;
                    shown.push(text);
                    self.written.cells_cut += cut;
                }
                self.written.not_shown += batch.num_rows() - keep;
            }
            Sink::Csv(w) => w.write(&normalize(batch, true)?)?,
            Sink::Json(w) => w.write(&normalize(batch, false)?)?,
            Sink::Ndjson(w) => w.write(&normalize(batch, false)?)?,
            Sink::Parquet(w) => w.write(&normalize(batch, false)?)?,
        }
        Ok(())
    }

    /// Finish the output (the table is drawn now, with a line saying how
    /// many rows it left out) and flush it.
    pub fn finish(self) -> Result<Written, OutputError> {
        let ResultWriter {
            sink,
            failed,
            written,
        } = self;
        with_kind(&failed, finish_sink(sink, written)).map(|()| written)
    }

    fn with_kind<T>(&self, r: Result<T, OutputError>) -> Result<T, OutputError> {
        with_kind(&self.failed, r)
    }
}

/// `r`, its error made an [`OutputError::Io`] of the kind the writer met.
fn with_kind<T>(
    failed: &Mutex<Option<std::io::ErrorKind>>,
    r: Result<T, OutputError>,
) -> Result<T, OutputError> {
    let failed = *failed.lock().unwrap_or_else(|p| p.into_inner());
    r.map_err(|e| match (failed, e) {
        (_, OutputError::Io(e)) => OutputError::Io(e),
        (Some(kind), e) => OutputError::Io(std::io::Error::new(kind, e)),
        (None, e) => e,
    })
}

fn finish_sink<W: Write + Send>(sink: Sink<W>, written: Written) -> Result<(), OutputError> {
    match sink {
        Sink::Table {
            mut w,
            schema,
            mut shown,
            cap,
        } => {
            if shown.is_empty() {
                shown.push(RecordBatch::new_empty(schema));
            }
            writeln!(w, "{}", arrow::util::pretty::pretty_format_batches(&shown)?)?;
            if written.not_shown > 0 {
                writeln!(
                    w,
                    "{} rows, {} not shown (--maxrows {}; 0 shows every row)",
                    written.rows,
                    written.not_shown,
                    cap.rows.unwrap_or(0)
                )?;
            }
            if written.cells_cut > 0 {
                writeln!(
                    w,
                    "{} cell(s) cut at {} characters (--maxchars; 0 shows them whole)",
                    written.cells_cut,
                    cap.chars.unwrap_or(0)
                )?;
            }
            w.flush()?;
        }
        Sink::Csv(w) => w.into_inner().flush()?,
        Sink::Json(mut w) => {
            w.finish()?;
            w.into_inner().flush()?;
        }
        Sink::Ndjson(mut w) => {
            w.finish()?;
            w.into_inner().flush()?;
        }
        Sink::Parquet(w) => {
            w.into_inner()?.flush()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, Int32Builder, ListBuilder};

    fn sample() -> RecordBatch {
        let mut l = ListBuilder::new(Int32Builder::new());
        l.values().append_slice(&[1, 2]);
        l.append(true);
        RecordBatch::try_from_iter(vec![
            ("n", Arc::new(Int32Array::from(vec![7])) as ArrayRef),
            ("cites", Arc::new(l.finish()) as ArrayRef),
        ])
        .unwrap()
    }

    /// A writer whose reader went away.
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_keeps_its_kind_in_every_format() {
        let big = RecordBatch::try_from_iter(vec![(
            "n",
            Arc::new(Int32Array::from_iter_values(0..100_000)) as ArrayRef,
        )])
        .unwrap();
        for format in [
            Format::Table,
            Format::Csv,
            Format::Json,
            Format::Ndjson,
            Format::Parquet,
        ] {
            match write_batches(Closed, std::slice::from_ref(&big), format) {
                Err(OutputError::Io(e)) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{format:?}")
                }
                other => panic!("{format:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn csv_flattens_lists_and_json_keeps_them() {
        let mut out = Vec::new();
        write_batches(&mut out, &[sample()], Format::Csv).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "n,cites\n7,\"[1, 2]\"\n");
        let mut out = Vec::new();
        write_batches(&mut out, &[sample()], Format::Ndjson).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"n\":7,\"cites\":[1,2]}\n"
        );
    }
}
