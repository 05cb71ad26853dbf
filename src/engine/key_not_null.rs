//! `hash_key(x) IS NOT NULL` read as `x IS NOT NULL`.
//!
//! The export streams join the lake on `hash_key(traj_id)`, and the session
//! filters null join keys before joins (`filter_null_join_keys`), so every
//! message and turn had its key hashed twice: once for that filter and once
//! for the join. `hash_key` is null exactly where its text is, so the
//! filter needs only the text's null mask.

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// Functions of one argument that are null exactly where it is.
const NULL_WHERE_ARGUMENT_IS: [&str; 1] = ["hash_key"];

/// Rewrites `f(x) IS NOT NULL` into `x IS NOT NULL` for those functions.
#[derive(Debug, Default)]
pub struct KeyNotNull;

impl OptimizerRule for KeyNotNull {
    fn name(&self) -> &str {
        "turnlake_key_not_null"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        plan.map_expressions(|expr| expr.transform_up(rewrite_not_null))
    }
}

fn rewrite_not_null(expr: Expr) -> Result<Transformed<Expr>> {
    let Expr::IsNotNull(inner) = &expr else {
        return Ok(Transformed::no(expr));
    };
    match inner.as_ref() {
        Expr::ScalarFunction(ScalarFunction { func, args })
            if args.len() == 1 && NULL_WHERE_ARGUMENT_IS.contains(&func.name()) =>
        {
            Ok(Transformed::yes(Expr::IsNotNull(Box::new(args[0].clone()))))
        }
        _ => Ok(Transformed::no(expr)),
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;
    use datafusion::prelude::SessionContext;
    use std::sync::Arc;

    use super::*;

    async fn joined(ctx: &SessionContext) -> (Vec<String>, String) {
        let texts = |v: Vec<Option<&str>>| {
            let schema = Schema::new(vec![Field::new("t", DataType::Utf8, true)]);
            RecordBatch::try_new(Arc::new(schema), vec![Arc::new(StringArray::from(v))]).unwrap()
        };
        ctx.register_batch("a", texts(vec![Some("x"), None, Some("y")]))
            .unwrap();
        ctx.register_batch("b", texts(vec![Some("y"), None, Some("z"), Some("x")]))
            .unwrap();
        let sql = "SELECT a.t FROM a JOIN b ON hash_key(a.t) = hash_key(b.t) ORDER BY 1";
        let rows = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let got = rows
            .iter()
            .flat_map(|b| {
                let c = b.column(0).as_string::<i32>();
                c.iter().map(|s| s.unwrap().to_string()).collect::<Vec<_>>()
            })
            .collect();
        let plan = ctx.sql(&format!("EXPLAIN {sql}")).await.unwrap();
        let plan = plan.collect().await.unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        (got, text)
    }

    #[tokio::test]
    async fn a_hashed_join_key_is_checked_for_null_on_its_text() {
        let session = || {
            let mut config = datafusion::prelude::SessionConfig::new();
            config.options_mut().optimizer.filter_null_join_keys = true;
            let ctx = SessionContext::new_with_config(config);
            crate::udf::register_all(&ctx);
            ctx
        };
        let plain = session();
        let (want, plain_plan) = joined(&plain).await;
        assert!(
            plain_plan.contains("hash_key(a.t) IS NOT NULL"),
            "{plain_plan}"
        );
        let ruled = session();
        ruled.add_optimizer_rule(Arc::new(KeyNotNull));
        let (got, plan) = joined(&ruled).await;
        assert_eq!(got, want);
        assert_eq!(got, ["x", "y"]);
        assert!(!plan.contains("hash_key(a.t) IS NOT NULL"), "{plan}");
        assert!(plan.contains("a.t IS NOT NULL"), "{plan}");
    }
}
