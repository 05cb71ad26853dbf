//! `turnlake tables`: each table with rows, version and partition columns.

use comfy_table::Table;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::engine;

pub async fn run(lake: &LakeArg) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let ctx = engine::session(&lake).await?;
    let mut table = Table::new();
    table.set_header(vec!["table", "rows", "version", "partitioned by"]);
    for info in lake.tables().await? {
        let b = engine::run_sql(
            &ctx,
            &format!("SELECT count(*) FROM \"{}\"", info.name),
            &info.name,
        )
        .await?;
        let rows = crate::columns::scalar_i64(&b);
        table.add_row(vec![
            info.name,
            rows.to_string(),
            info.version.to_string(),
            info.partition_by.join(", "),
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}
