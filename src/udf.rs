//! The turn rules of `crate::turn` as DataFusion scalar UDFs, so SQL can
//! call the exact code ingest used. Each UDF takes one text column (any
//! string type) and maps it row by row; this module only adapts.
//!
//! | UDF | returns |
//! |---|---|
//! | `bash_command(text)` | the first bash block of an assistant message |
//! | `n_bash_blocks(text)` | how many bash blocks it holds |
//! | `cmd_kind(command)` | the command kind label |
//! | `is_submit(command)` | whether the command submits |
//! | `think_unclosed(text)` | whether a `<think>` is left open |
//! | `cited_outputs(text)` | the CANDIDATE OUTPUT numbers a judge explanation cites |
//! | `obs_format(text)` | RETURNCODE / SWE_AGENT / OPENHANDS of an observation |
//! | `obs_failed(text)` | whether an observation reports failure (its own format) |
//! | `normalize_command(command)` | the command with whitespace collapsed, as repeats compare it |

use arrow::array::{
    ArrayRef, AsArray, BooleanArray, Int32Array, Int32Builder, ListBuilder, StringArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::turn;

type Kernel = fn(&StringArray) -> ArrayRef;

/// One text-in UDF: a name, a return type and a kernel over a string array.
#[derive(Debug)]
pub struct TextUdf {
    name: &'static str,
    returns: DataType,
    kernel: Kernel,
    signature: Signature,
}

impl PartialEq for TextUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for TextUdf {}
impl Hash for TextUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl TextUdf {
    fn new(name: &'static str, returns: DataType, kernel: Kernel) -> Self {
        let signature = Signature::uniform(
            1,
            vec![DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View],
            Volatility::Immutable,
        );
        TextUdf {
            name,
            returns,
            kernel,
            signature,
        }
    }
}

impl ScalarUDFImpl for TextUdf {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].to_array(args.number_rows)?;
        let text = cast(&input, &DataType::Utf8)?;
        Ok(ColumnarValue::Array((self.kernel)(text.as_string::<i32>())))
    }
}

fn map_str(a: &StringArray, f: impl Fn(&str) -> Option<String>) -> ArrayRef {
    Arc::new(a.iter().map(|v| v.and_then(&f)).collect::<StringArray>())
}
fn map_bool(a: &StringArray, f: impl Fn(&str) -> bool) -> ArrayRef {
    Arc::new(a.iter().map(|v| v.map(&f)).collect::<BooleanArray>())
}

fn bash_command(a: &StringArray) -> ArrayRef {
    map_str(a, |t| {
        turn::extract_bash_blocks(t).first().map(|s| s.to_string())
    })
}
fn n_bash_blocks(a: &StringArray) -> ArrayRef {
    Arc::new(
        a.iter()
            .map(|v| v.map(|t| turn::extract_bash_blocks(t).len() as i32))
            .collect::<Int32Array>(),
    )
}
fn cmd_kind(a: &StringArray) -> ArrayRef {
    map_str(a, |c| {
        Some(turn::classify_command(c, None).as_str().to_string())
    })
}
fn is_submit(a: &StringArray) -> ArrayRef {
    map_bool(a, |c| turn::is_submit_command(c, None))
}
fn think_unclosed(a: &StringArray) -> ArrayRef {
    map_bool(a, turn::think_unclosed)
}
fn cited_outputs(a: &StringArray) -> ArrayRef {
    let mut b = ListBuilder::new(Int32Builder::new());
    for v in a.iter() {
        match v {
            Some(t) => {
                for n in turn::parse_citations(t) {
                    b.values().append_value(n as i32);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}
fn normalize_command(a: &StringArray) -> ArrayRef {
    map_str(a, |c| Some(turn::loops::normalize_command(c)))
}
fn obs_format(a: &StringArray) -> ArrayRef {
    map_str(a, |t| Some(turn::detect_obs_format(t).as_str().to_string()))
}
fn obs_failed(a: &StringArray) -> ArrayRef {
    map_bool(a, |t| {
        turn::observation_outcome(turn::detect_obs_format(t), t).failed
    })
}

/// Every turnlake UDF.
pub fn all() -> Vec<ScalarUDF> {
    let list = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
    [
        TextUdf::new("bash_command", DataType::Utf8, bash_command),
        TextUdf::new("n_bash_blocks", DataType::Int32, n_bash_blocks),
        TextUdf::new("cmd_kind", DataType::Utf8, cmd_kind),
        TextUdf::new("is_submit", DataType::Boolean, is_submit),
        TextUdf::new("think_unclosed", DataType::Boolean, think_unclosed),
        TextUdf::new("cited_outputs", list, cited_outputs),
        TextUdf::new("normalize_command", DataType::Utf8, normalize_command),
        TextUdf::new("obs_format", DataType::Utf8, obs_format),
        TextUdf::new("obs_failed", DataType::Boolean, obs_failed),
    ]
    .into_iter()
    .map(ScalarUDF::from)
    .collect()
}

pub fn register_all(ctx: &SessionContext) {
    for udf in all() {
        ctx.register_udf(udf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn udfs_answer_in_sql() {
        let ctx = SessionContext::new();
        register_all(&ctx);
        let df = ctx
            .sql(
                "SELECT cmd_kind(bash_command(c)) AS k, n_bash_blocks(c) AS n, think_unclosed(c) AS th, \
                 cited_outputs('CANDIDATE OUTPUTS 1-2 and 4') AS cites, \
                 obs_failed('<returncode>2</returncode>\n<output>\n</output>') AS f \
                 FROM (VALUES ('THOUGHT: x\n\n```bash\ncat -n a.py\n```')) AS v(c)",
            )
            .await
            .unwrap();
        let batches = df.collect().await.unwrap();
        let b = &batches[0];
        assert_eq!(b.column(0).as_string::<i32>().value(0), "cat -n");
        assert_eq!(
            b.column(1)
                .as_primitive::<arrow::datatypes::Int32Type>()
                .value(0),
            1
        );
        assert!(!b.column(2).as_boolean().value(0));
        let cites = b.column(3).as_list::<i32>().value(0);
        assert_eq!(
            cites
                .as_primitive::<arrow::datatypes::Int32Type>()
                .values()
                .to_vec(),
            vec![1, 2, 4]
        );
        assert!(b.column(4).as_boolean().value(0));
        assert!(b.column(4).is_valid(0));
    }
}
