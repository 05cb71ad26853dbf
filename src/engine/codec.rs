//! The logical codec client, scheduler and executors share: Ballista's own,
//! plus the two kinds of table turnlake plans hold that DataFusion cannot
//! serialize by itself: pinned lake tables and small in-memory tables
//! (step parameters, `CREATE TABLE … AS` results).

use std::io::Cursor;
use std::sync::Arc;

use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::record_batch::RecordBatch;
use ballista_core::serde::BallistaLogicalExtensionCodec;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion_proto::logical_plan::LogicalExtensionCodec;

use crate::engine::pinned::{PinnedFiles, PinnedTable};

/// First byte of an encoded table: which kind follows.
const PINNED: u8 = b'P';
const MEMORY: u8 = b'M';

#[derive(Debug, Default)]
pub struct LakeCodec {
    ballista: BallistaLogicalExtensionCodec,
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn encode_memory(table: &MemTable, schema: SchemaRef, buf: &mut Vec<u8>) -> Result<()> {
    let mut writer = StreamWriter::try_new(&mut *buf, &schema)?;
    for partition in &table.batches {
        let batches = partition
            .try_read()
            .map_err(|_| DataFusionError::Internal("an in-memory table is being written".into()))?;
        for batch in batches.iter() {
            writer.write(batch)?;
        }
    }
    writer.finish()?;
    Ok(())
}

fn decode_memory(buf: &[u8], schema: SchemaRef) -> Result<MemTable> {
    let reader = StreamReader::try_new(Cursor::new(buf), None)?;
    let batches = reader.collect::<std::result::Result<Vec<RecordBatch>, _>>()?;
    MemTable::try_new(schema, vec![batches])
}

impl LogicalExtensionCodec for LakeCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match buf.split_first() {
            Some((&PINNED, rest)) => {
                let files: PinnedFiles = serde_json::from_slice(rest).map_err(external)?;
                Ok(Arc::new(PinnedTable::new(schema, files)?))
            }
            Some((&MEMORY, rest)) => Ok(Arc::new(decode_memory(rest, schema)?)),
            _ => self
                .ballista
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(pinned) = node.downcast_ref::<PinnedTable>() {
            buf.push(PINNED);
            serde_json::to_writer(&mut *buf, pinned.files()).map_err(external)
        } else if let Some(memory) = node.downcast_ref::<MemTable>() {
            buf.push(MEMORY);
            encode_memory(memory, node.schema(), buf)
        } else {
            self.ballista
                .try_encode_table_provider(table_ref, node, buf)
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    #[test]
    fn memory_tables_round_trip() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("n", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("é"), None])),
                Arc::new(Int64Array::from(vec![1, 2])),
            ],
        )
        .unwrap();
        let table: Arc<dyn TableProvider> =
            Arc::new(MemTable::try_new(schema.clone(), vec![vec![batch.clone()]]).unwrap());
        let codec = LakeCodec::default();
        let mut buf = Vec::new();
        codec
            .try_encode_table_provider(&"t".into(), table, &mut buf)
            .unwrap();
        let ctx = TaskContext::default();
        let back = codec
            .try_decode_table_provider(&buf, &"t".into(), schema, &ctx)
            .unwrap();
        let back = back.downcast_ref::<MemTable>().unwrap();
        let rows = back.batches[0].try_read().unwrap();
        assert_eq!(rows.as_slice(), &[batch]);
    }
}
