//! The tables of the `mysql` schema that dump tools need to see as tables.
//!
//! shoal keeps its accounts as system records of the store (`mysql.user`, `mysql.db` and
//! `mysql.tables_priv` are read-only virtual tables over them, served by the session layer)
//! and writes no query logs to tables. `mariadb-dump --all-databases` (and `mysqldump`, the
//! same client on Debian) nevertheless insists on two tables of `mysql`: before anything else
//! in that schema it asks for the structure of `general_log` and `slow_log` (an
//! information_schema.TABLES probe, `SHOW CREATE TABLE`, an information_schema.COLUMNS query)
//! and writes `CREATE TABLE IF NOT EXISTS` for each into the dump, so that a restore on a new
//! server has the log tables before anything could log into them. A missing table there
//! aborts the whole dump.
//!
//! So the two log tables exist here with MySQL 8.0's definitions, exactly as `SHOW CREATE
//! TABLE` prints them on MySQL, and no rows (shoal has no table log output): `SHOW [FULL]
//! TABLES FROM mysql` lists them, information_schema.TABLES (engine CSV, as in MySQL) and
//! COLUMNS describe them, `SELECT` reads them (empty), and `CREATE TABLE [IF NOT EXISTS]` of
//! either in `mysql` answers as for any existing table (note or error 1050) without
//! translating the definition, whose `time(6)` columns shoal's tables do not have. The dump
//! tools skip their data on their own (both are on the built-in ignore list, next to
//! `mysql.transaction_registry`).
//!
//! The account tables are deliberately not listed by `SHOW TABLES`: a dump would write
//! `DROP TABLE` / `CREATE TABLE` / `INSERT` for them, which a restore could not apply to
//! records that are not tables. Accounts travel with the physical backup, or as `SHOW CREATE
//! USER` + `SHOW GRANTS` output (docs/OPERATIONS.md, "Backup and restore").

/// One column of a log table as information_schema.COLUMNS shows it.
pub struct LogColumn {
    /// COLUMN_NAME.
    pub name: &'static str,
    /// DATA_TYPE.
    pub data_type: &'static str,
    /// COLUMN_TYPE.
    pub column_type: &'static str,
    /// CHARACTER_MAXIMUM_LENGTH (strings and blobs).
    pub char_len: Option<i64>,
    /// (NUMERIC_PRECISION, NUMERIC_SCALE) of integer columns.
    pub numeric: Option<(i64, i64)>,
}

/// A log table of the `mysql` schema.
pub struct LogTable {
    /// Table name (lower case, as MySQL's).
    pub name: &'static str,
    /// Columns in order.
    pub columns: &'static [LogColumn],
    /// `SHOW CREATE TABLE`'s second column, as MySQL 8.0 prints it.
    pub create: &'static str,
}

const fn col(name: &'static str, data_type: &'static str, column_type: &'static str) -> LogColumn {
    LogColumn {
        name,
        data_type,
        column_type,
        char_len: None,
        numeric: None,
    }
}

const fn text(
    name: &'static str,
    data_type: &'static str,
    column_type: &'static str,
    len: i64,
) -> LogColumn {
    LogColumn {
        name,
        data_type,
        column_type,
        char_len: Some(len),
        numeric: None,
    }
}

const fn int(
    name: &'static str,
    data_type: &'static str,
    column_type: &'static str,
    precision: i64,
) -> LogColumn {
    LogColumn {
        name,
        data_type,
        column_type,
        char_len: None,
        numeric: Some((precision, 0)),
    }
}

/// `mysql.general_log` and `mysql.slow_log`.
pub const LOG_TABLES: &[LogTable] = &[
    LogTable {
        name: "general_log",
        columns: &[
            col("event_time", "timestamp", "timestamp(6)"),
            text("user_host", "mediumtext", "mediumtext", 16777215),
            int("thread_id", "bigint", "bigint unsigned", 20),
            int("server_id", "int", "int unsigned", 10),
            text("command_type", "varchar", "varchar(64)", 64),
            text("argument", "mediumblob", "mediumblob", 16777215),
        ],
        create: "CREATE TABLE `general_log` (\n  \
                 `event_time` timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),\n  \
                 `user_host` mediumtext NOT NULL,\n  \
                 `thread_id` bigint unsigned NOT NULL,\n  \
                 `server_id` int unsigned NOT NULL,\n  \
                 `command_type` varchar(64) NOT NULL,\n  \
                 `argument` mediumblob NOT NULL\n\
                 ) ENGINE=CSV DEFAULT CHARSET=utf8mb3 COMMENT='General log'",
    },
    LogTable {
        name: "slow_log",
        columns: &[
            col("start_time", "timestamp", "timestamp(6)"),
            text("user_host", "mediumtext", "mediumtext", 16777215),
            col("query_time", "time", "time(6)"),
            col("lock_time", "time", "time(6)"),
            int("rows_sent", "int", "int", 10),
            int("rows_examined", "int", "int", 10),
            text("db", "varchar", "varchar(512)", 512),
            int("last_insert_id", "int", "int", 10),
            int("insert_id", "int", "int", 10),
            int("server_id", "int", "int unsigned", 10),
            text("sql_text", "mediumblob", "mediumblob", 16777215),
            int("thread_id", "bigint", "bigint unsigned", 20),
        ],
        create: "CREATE TABLE `slow_log` (\n  \
                 `start_time` timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),\n  \
                 `user_host` mediumtext NOT NULL,\n  \
                 `query_time` time(6) NOT NULL,\n  \
                 `lock_time` time(6) NOT NULL,\n  \
                 `rows_sent` int NOT NULL,\n  \
                 `rows_examined` int NOT NULL,\n  \
                 `db` varchar(512) NOT NULL,\n  \
                 `last_insert_id` int NOT NULL,\n  \
                 `insert_id` int NOT NULL,\n  \
                 `server_id` int unsigned NOT NULL,\n  \
                 `sql_text` mediumblob NOT NULL,\n  \
                 `thread_id` bigint unsigned NOT NULL\n\
                 ) ENGINE=CSV DEFAULT CHARSET=utf8mb3 COMMENT='Slow log'",
    },
];

/// The log table `db.name`, if that is one (`db` is `mysql`, names case-insensitive).
pub fn log_table(db: &str, name: &str) -> Option<&'static LogTable> {
    if !db.eq_ignore_ascii_case("mysql") {
        return None;
    }
    LOG_TABLES
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
}

/// Whether `name` is a log table's name (in whichever database).
pub fn is_log_table_name(name: &str) -> bool {
    LOG_TABLES.iter().any(|t| t.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_create_texts_name_every_column_in_order() {
        for t in LOG_TABLES {
            let mut at = 0;
            for c in t.columns {
                let needle = format!("`{}` {} NOT NULL", c.name, c.column_type);
                let pos = t.create[at..]
                    .find(&needle)
                    .unwrap_or_else(|| panic!("{}: {needle}", t.name));
                at += pos + needle.len();
            }
        }
        assert!(log_table("MySQL", "GENERAL_LOG").is_some());
        assert!(log_table("shop", "general_log").is_none());
    }
}
