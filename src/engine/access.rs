//! What a statement may do beyond reading: the one rule that SQL a person
//! types (`turnlake sql`, the web app) runs under.
//!
//! Session DDL (views, in-memory tables, `CREATE EXTERNAL TABLE`, which only
//! reads) is always allowed: pipeline SQL files need it. Statements that
//! write (`INSERT`, `UPDATE`, `DELETE`, `COPY … TO`) need [`Access::Writes`],
//! and never reach a table of the lake: those change only by turnlake's
//! steps, which commit the lake as a whole.

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::execution::context::SQLOptions;
use datafusion::logical_expr::LogicalPlan;

use crate::engine::pinned::PinnedTable;

/// Whether a session's statements may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Queries only (`SELECT`, `WITH`, `EXPLAIN`): SQL from the web app's
    /// page, where session DDL such as `CREATE EXTERNAL TABLE` would read
    /// files beyond the lake, and a view would outlive the request.
    QueryOnly,
    /// Reads and session DDL only.
    ReadOnly,
    /// Also `INSERT`/`UPDATE`/`DELETE` into session tables and `COPY … TO`.
    Writes,
}

/// Why a statement was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error(
        "{0}: this session is read-only (turnlake sql --allow-writes runs statements that write)"
    )]
    ReadOnly(String),
    #[error("{0}: only queries run here (SELECT, WITH, EXPLAIN): nothing that writes or defines")]
    QueryOnly(String),
    #[error("{op} {table}: {table} is a lake table; the lake is written only by turnlake's commands, never through SQL")]
    LakeTable { op: String, table: String },
}

/// `Ok` when `plan` may run under `access`.
pub fn check(plan: &LogicalPlan, access: Access) -> Result<(), Refused> {
    if access == Access::QueryOnly {
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_statements(false)
            .with_allow_dml(false);
        if options.verify_plan(plan).is_err() {
            let what = match plan {
                LogicalPlan::Ddl(ddl) => ddl.name().to_string(),
                LogicalPlan::Statement(s) => s.name().to_string(),
                _ => first_write(plan),
            };
            return Err(Refused::QueryOnly(what));
        }
    }
    if access == Access::ReadOnly {
        let options = SQLOptions::new()
            .with_allow_ddl(true)
            .with_allow_statements(true)
            .with_allow_dml(false);
        if options.verify_plan(plan).is_err() {
            return Err(Refused::ReadOnly(first_write(plan)));
        }
    }
    let mut refused = None;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Dml(dml) = node {
            let lake_table = source_as_provider(&dml.target)
                .is_ok_and(|t| t.downcast_ref::<PinnedTable>().is_some());
            if lake_table {
                refused = Some(Refused::LakeTable {
                    op: dml.op.to_string(),
                    table: dml.table_name.to_string(),
                });
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .expect("the visit itself does not fail");
    refused.map_or(Ok(()), Err)
}

/// What the first writing node of `plan` does, for the error.
fn first_write(plan: &LogicalPlan) -> String {
    let mut what = String::from("the statement writes");
    let _ = plan.apply_with_subqueries(|node| {
        let found = match node {
            LogicalPlan::Dml(dml) => Some(format!("{} {}", dml.op, dml.table_name)),
            LogicalPlan::Copy(copy) => Some(format!("COPY TO {}", copy.output_url)),
            _ => None,
        };
        match found {
            Some(found) => {
                what = found;
                Ok(TreeNodeRecursion::Stop)
            }
            None => Ok(TreeNodeRecursion::Continue),
        }
    });
    what
}
