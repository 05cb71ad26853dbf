//! `CAST(flag AS DOUBLE)` as a column-wise kernel.
//!
//! Shares of flagged turns are written `avg(CAST(obs_failed AS DOUBLE))`,
//! and Arrow casts a boolean to a number one row at a time, through an
//! `Option` per row: over the lake's 13M turns that cast took a fifth of a
//! grouped query's time. [`BoolCasts`] rewrites such casts into
//! [`BoolAsNumber`], which maps the value bits directly and keeps the null
//! mask as it is. The result, its name and its nullability are the cast's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowNativeTypeOp, ArrowPrimitiveType, DataType, Field, FieldRef, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// Rewrites `CAST(boolean AS number)` into [`BoolAsNumber`].
#[derive(Debug, Default)]
pub struct BoolCasts;

impl OptimizerRule for BoolCasts {
    fn name(&self) -> &str {
        "turnlake_bool_casts"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        // Only nodes over one input: their expressions read that input's schema.
        let input_schema = match plan.inputs().as_slice() {
            [input] => Arc::clone(input.schema()),
            _ => return Ok(Transformed::no(plan)),
        };
        plan.map_expressions(|expr| expr.transform_up(|e| rewrite_cast(e, &input_schema)))
    }
}

fn rewrite_cast(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast { expr: inner, field }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    let from_bool = matches!(inner.get_type(schema), Ok(DataType::Boolean));
    if !from_bool || !BoolAsNumber::supports(field.data_type()) {
        return Ok(Transformed::no(expr));
    }
    let udf = ScalarUDF::new_from_impl(BoolAsNumber::new(field.data_type().clone()));
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(Arc::new(udf), vec![inner.as_ref().clone()]),
    )))
}

/// A boolean as 1 or 0 of a numeric type; null stays null.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BoolAsNumber {
    target: DataType,
    signature: Signature,
}

impl BoolAsNumber {
    fn new(target: DataType) -> BoolAsNumber {
        BoolAsNumber {
            target,
            signature: Signature::exact(vec![DataType::Boolean], Volatility::Immutable),
        }
    }

    fn supports(target: &DataType) -> bool {
        use DataType::*;
        matches!(
            target,
            Float64 | Float32 | Int64 | Int32 | Int16 | Int8 | UInt64 | UInt32 | UInt16 | UInt8
        )
    }

    fn convert(&self, flags: &ArrayRef) -> Result<ArrayRef> {
        let flags = flags.as_boolean();
        Ok(match self.target {
            DataType::Float64 => ones_and_zeros::<Float64Type>(flags),
            DataType::Float32 => ones_and_zeros::<Float32Type>(flags),
            DataType::Int64 => ones_and_zeros::<Int64Type>(flags),
            DataType::Int32 => ones_and_zeros::<Int32Type>(flags),
            DataType::Int16 => ones_and_zeros::<Int16Type>(flags),
            DataType::Int8 => ones_and_zeros::<Int8Type>(flags),
            DataType::UInt64 => ones_and_zeros::<UInt64Type>(flags),
            DataType::UInt32 => ones_and_zeros::<UInt32Type>(flags),
            DataType::UInt16 => ones_and_zeros::<UInt16Type>(flags),
            DataType::UInt8 => ones_and_zeros::<UInt8Type>(flags),
            ref other => {
                return Err(datafusion::error::DataFusionError::Internal(format!(
                    "bool_as_number to {other}"
                )))
            }
        })
    }
}

fn ones_and_zeros<T: ArrowPrimitiveType>(flags: &arrow::array::BooleanArray) -> ArrayRef {
    // Zeros are one memset; flags are mostly unset, so visit the set ones only.
    let mut values = vec![T::Native::ZERO; flags.len()];
    for i in flags.values().set_indices() {
        values[i] = T::Native::ONE;
    }
    Arc::new(PrimitiveArray::<T>::new(
        values.into(),
        flags.nulls().cloned(),
    ))
}

impl ScalarUDFImpl for BoolAsNumber {
    fn name(&self) -> &str {
        "bool_as_number"
    }

    /// A cast's name is its argument's; so is this one's, so a rewritten
    /// plan keeps its column names.
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        Ok(args[0].schema_name().to_string())
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.target.clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        // As a cast: the argument's nullability and metadata.
        let arg = &args.arg_fields[0];
        let field = Field::new(self.name(), self.target.clone(), arg.is_nullable());
        Ok(Arc::new(field.with_metadata(arg.metadata().clone())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match &args.args[0] {
            ColumnarValue::Array(flags) => Ok(ColumnarValue::Array(self.convert(flags)?)),
            ColumnarValue::Scalar(flag) => {
                let one = self.convert(&flag.to_array()?)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&one, 0)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    /// Same values, names, types and nullability as DataFusion's own cast.
    #[tokio::test]
    async fn rewritten_casts_answer_as_casts() {
        let sql = "SELECT k, CAST(f AS DOUBLE), avg(CAST(f AS DOUBLE)) OVER () AS share, \
                   CAST(f AS INT) AS i, CAST(NULL::boolean AS BIGINT) AS n \
                   FROM (VALUES (1, true), (2, false), (3, NULL)) AS v(k, f) ORDER BY k";
        let plain = SessionContext::new();
        let fast = SessionContext::new();
        fast.add_optimizer_rule(Arc::new(BoolCasts));
        let explain = fast.sql(&format!("EXPLAIN {sql}")).await.unwrap();
        let explain = arrow::util::pretty::pretty_format_batches(&explain.collect().await.unwrap())
            .unwrap()
            .to_string();
        assert!(explain.contains("bool_as_number"), "{explain}");
        let a = plain.sql(sql).await.unwrap().collect().await.unwrap();
        let b = fast.sql(sql).await.unwrap().collect().await.unwrap();
        assert_eq!(a[0].schema(), b[0].schema());
        assert_eq!(
            arrow::util::pretty::pretty_format_batches(&a)
                .unwrap()
                .to_string(),
            arrow::util::pretty::pretty_format_batches(&b)
                .unwrap()
                .to_string()
        );
    }
}
