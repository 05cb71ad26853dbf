//! Result output in one of several formats, written to any `Write` so tests
//! need no disk.

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use std::io::Write;
use std::sync::Arc;

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
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// A writer that remembers the kind of the first I/O error it returned:
/// arrow's CSV writer reports one as text, and whoever reads our error must
/// still tell a reader that went away (`BrokenPipe`) from a full disk.
struct Watched<W> {
    inner: W,
    failed: Option<std::io::ErrorKind>,
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        if let Err(e) = &r {
            self.failed.get_or_insert(e.kind());
        }
        r
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        if let Err(e) = &r {
            self.failed.get_or_insert(e.kind());
        }
        r
    }
}

/// Write `batches` to `w` in `format`. A failed write of `w` is an
/// [`OutputError::Io`] of its kind, whichever writer met it.
pub fn write_batches<W: Write + Send>(
    w: W,
    batches: &[RecordBatch],
    format: Format,
) -> Result<(), OutputError> {
    let mut watched = Watched {
        inner: w,
        failed: None,
    };
    write_all(&mut watched, batches, format).map_err(|e| match (watched.failed, e) {
        (_, OutputError::Io(e)) => OutputError::Io(e),
        (Some(kind), e) => OutputError::Io(std::io::Error::new(kind, e)),
        (None, e) => e,
    })
}

fn write_all<W: Write + Send>(
    w: W,
    batches: &[RecordBatch],
    format: Format,
) -> Result<(), OutputError> {
    let flatten = format == Format::Csv;
    let batches = batches
        .iter()
        .map(|b| normalize(b, flatten))
        .collect::<Result<Vec<_>, _>>()?;
    let mut w = w;
    match format {
        Format::Table => writeln!(
            w,
            "{}",
            arrow::util::pretty::pretty_format_batches(&batches)?
        )?,
        Format::Csv => {
            let mut cw = arrow::csv::WriterBuilder::new().with_header(true).build(w);
            for b in &batches {
                cw.write(b)?;
            }
        }
        Format::Json => {
            let mut jw = arrow::json::ArrayWriter::new(w);
            for b in &batches {
                jw.write(b)?;
            }
            jw.finish()?;
        }
        Format::Ndjson => {
            let mut jw = arrow::json::LineDelimitedWriter::new(w);
            for b in &batches {
                jw.write(b)?;
            }
            jw.finish()?;
        }
        Format::Parquet => {
            let schema = batches
                .first()
                .map(|b| b.schema())
                .unwrap_or_else(|| Arc::new(Schema::empty()));
            let mut pw = parquet::arrow::ArrowWriter::try_new(w, schema, None)?;
            for b in &batches {
                pw.write(b)?;
            }
            pw.close()?;
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
