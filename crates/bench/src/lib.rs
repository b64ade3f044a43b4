//! shoal-bench: sysbench-compatible OLTP load from thousands of connections on a small
//! tokio runtime, and the capacity-test method (stepped load to the knee, confirmation,
//! soak with drift verdict, sweeps over server configurations, HTML/SVG/markdown reports).
//!
//! Layout: [`rand`] and [`workload`] re-implement sysbench's distributions and OLTP scripts;
//! [`client`] is one connection with its prepared statements; [`engine`] runs N clients in a
//! closed or open loop; [`sysmon`] reads /proc; [`server`] snapshots SHOW GLOBAL STATUS and the
//! thread-pool tables; [`method`] implements run/step/soak/sweep; [`result`] is the JSON
//! format; [`report`] renders it; [`prepare`] creates and drops the tables; [`plan`] runs the whole
//! sequence (prepare, environment, baseline, sweep, step, confirm, soak, report) from a TOML
//! plan, resumably. [`tpcc`] is TPC-C's order-entry workload (schema, load, the five
//! transactions, consistency check).

pub mod client;
pub mod engine;
pub mod method;
pub mod plan;
pub mod prepare;
pub mod rand;
pub mod report;
pub mod result;
pub mod server;
pub mod sysmon;
pub mod tpcc;
pub mod workload;
