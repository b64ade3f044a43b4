//! MySQL's error numbers, one table: each error shoal answers with has a constant here named as
//! in MySQL's `mysqld_error.h` (MariaDB's for the MariaDB-only ones), carrying its code and
//! SQLSTATE. Every layer builds its errors from these constants (`SqlError::coded`,
//! `ErrorInfo::coded`), so a code and its SQLSTATE are written once; [`ALL`] lists them for
//! lookups and tests.
//!
//! Messages are composed where the error is raised, in MariaDB's wording with the values of the
//! moment (`Unknown table 'd.t'`): they are part of the behaviour the SQL fixtures compare with
//! MariaDB, so they live beside the code that knows the values, not as format strings here.
//!
//! This crate is a leaf: the protocol, SQL, storage and session crates depend on it and it on
//! nothing.

/// One MySQL error: its number, SQLSTATE and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code {
    /// The MySQL error number (`ERROR 1146`).
    pub code: u16,
    /// The five-character SQLSTATE (`42S02`).
    pub state: &'static str,
    /// MySQL's symbolic name (`ER_NO_SUCH_TABLE`).
    pub name: &'static str,
}

impl Code {
    /// The error numbered `code`, if the table has it.
    pub fn of(code: u16) -> Option<Code> {
        ALL.iter().copied().find(|c| c.code == code)
    }
}

/// 1007 (HY000): database exists.
pub const ER_DB_CREATE_EXISTS: Code = Code {
    code: 1007,
    state: "HY000",
    name: "ER_DB_CREATE_EXISTS",
};
/// 1008 (HY000): database does not exist (DROP DATABASE).
pub const ER_DB_DROP_EXISTS: Code = Code {
    code: 1008,
    state: "HY000",
    name: "ER_DB_DROP_EXISTS",
};
/// 1021 (HY000): disk full.
pub const ER_DISK_FULL: Code = Code {
    code: 1021,
    state: "HY000",
    name: "ER_DISK_FULL",
};
/// 1030 (HY000): the storage engine failed (RocksDB error, disk full).
pub const ER_GET_ERRNO: Code = Code {
    code: 1030,
    state: "HY000",
    name: "ER_GET_ERRNO",
};
/// 1031 (HY000): the storage engine has no such option (a note).
pub const ER_ILLEGAL_HA: Code = Code {
    code: 1031,
    state: "HY000",
    name: "ER_ILLEGAL_HA",
};
/// 1038 (HY001): out of memory for a sort.
pub const ER_OUT_OF_SORTMEMORY: Code = Code {
    code: 1038,
    state: "HY001",
    name: "ER_OUT_OF_SORTMEMORY",
};
/// 1040 (08004): too many connections.
pub const ER_CON_COUNT_ERROR: Code = Code {
    code: 1040,
    state: "08004",
    name: "ER_CON_COUNT_ERROR",
};
/// 1043 (08S01): bad handshake.
pub const ER_HANDSHAKE_ERROR: Code = Code {
    code: 1043,
    state: "08S01",
    name: "ER_HANDSHAKE_ERROR",
};
/// 1044 (42000): access denied to a database.
pub const ER_DBACCESS_DENIED_ERROR: Code = Code {
    code: 1044,
    state: "42000",
    name: "ER_DBACCESS_DENIED_ERROR",
};
/// 1045 (28000): access denied (login, or a privilege on every level).
pub const ER_ACCESS_DENIED_ERROR: Code = Code {
    code: 1045,
    state: "28000",
    name: "ER_ACCESS_DENIED_ERROR",
};
/// 1046 (3D000): no database selected.
pub const ER_NO_DB_ERROR: Code = Code {
    code: 1046,
    state: "3D000",
    name: "ER_NO_DB_ERROR",
};
/// 1047 (08S01): unknown command.
pub const ER_UNKNOWN_COM_ERROR: Code = Code {
    code: 1047,
    state: "08S01",
    name: "ER_UNKNOWN_COM_ERROR",
};
/// 1048 (23000): column cannot be null.
pub const ER_BAD_NULL_ERROR: Code = Code {
    code: 1048,
    state: "23000",
    name: "ER_BAD_NULL_ERROR",
};
/// 1049 (42000): unknown database.
pub const ER_BAD_DB_ERROR: Code = Code {
    code: 1049,
    state: "42000",
    name: "ER_BAD_DB_ERROR",
};
/// 1050 (42S01): table already exists.
pub const ER_TABLE_EXISTS_ERROR: Code = Code {
    code: 1050,
    state: "42S01",
    name: "ER_TABLE_EXISTS_ERROR",
};
/// 1051 (42S02): unknown table (DROP TABLE, a qualifier).
pub const ER_BAD_TABLE_ERROR: Code = Code {
    code: 1051,
    state: "42S02",
    name: "ER_BAD_TABLE_ERROR",
};
/// 1052 (23000): ambiguous column.
pub const ER_NON_UNIQ_ERROR: Code = Code {
    code: 1052,
    state: "23000",
    name: "ER_NON_UNIQ_ERROR",
};
/// 1053 (08S01): server shutdown in progress.
pub const ER_SERVER_SHUTDOWN: Code = Code {
    code: 1053,
    state: "08S01",
    name: "ER_SERVER_SHUTDOWN",
};
/// 1054 (42S22): unknown column.
pub const ER_BAD_FIELD_ERROR: Code = Code {
    code: 1054,
    state: "42S22",
    name: "ER_BAD_FIELD_ERROR",
};
/// 1060 (42S21): duplicate column name.
pub const ER_DUP_FIELDNAME: Code = Code {
    code: 1060,
    state: "42S21",
    name: "ER_DUP_FIELDNAME",
};
/// 1061 (42000): duplicate key name.
pub const ER_DUP_KEYNAME: Code = Code {
    code: 1061,
    state: "42000",
    name: "ER_DUP_KEYNAME",
};
/// 1062 (23000): duplicate entry for a unique key.
pub const ER_DUP_ENTRY: Code = Code {
    code: 1062,
    state: "23000",
    name: "ER_DUP_ENTRY",
};
/// 1063 (42000): incorrect column specifier.
pub const ER_WRONG_FIELD_SPEC: Code = Code {
    code: 1063,
    state: "42000",
    name: "ER_WRONG_FIELD_SPEC",
};
/// 1064 (42000): syntax error.
pub const ER_PARSE_ERROR: Code = Code {
    code: 1064,
    state: "42000",
    name: "ER_PARSE_ERROR",
};
/// 1065 (42000): query was empty.
pub const ER_EMPTY_QUERY: Code = Code {
    code: 1065,
    state: "42000",
    name: "ER_EMPTY_QUERY",
};
/// 1066 (42000): not unique table/alias.
pub const ER_NONUNIQ_TABLE: Code = Code {
    code: 1066,
    state: "42000",
    name: "ER_NONUNIQ_TABLE",
};
/// 1067 (42000): invalid default value.
pub const ER_INVALID_DEFAULT: Code = Code {
    code: 1067,
    state: "42000",
    name: "ER_INVALID_DEFAULT",
};
/// 1068 (42000): multiple primary keys defined.
pub const ER_MULTIPLE_PRI_KEY: Code = Code {
    code: 1068,
    state: "42000",
    name: "ER_MULTIPLE_PRI_KEY",
};
/// 1072 (42000): key column does not exist.
pub const ER_KEY_COLUMN_DOES_NOT_EXITS: Code = Code {
    code: 1072,
    state: "42000",
    name: "ER_KEY_COLUMN_DOES_NOT_EXITS",
};
/// 1074 (42000): a string column declared longer than its type allows.
pub const ER_TOO_BIG_FIELDLENGTH: Code = Code {
    code: 1074,
    state: "42000",
    name: "ER_TOO_BIG_FIELDLENGTH",
};
/// 1086 (HY000): file already exists.
pub const ER_FILE_EXISTS_ERROR: Code = Code {
    code: 1086,
    state: "HY000",
    name: "ER_FILE_EXISTS_ERROR",
};
/// 1090 (42000): cannot drop every column.
pub const ER_CANT_REMOVE_ALL_FIELDS: Code = Code {
    code: 1090,
    state: "42000",
    name: "ER_CANT_REMOVE_ALL_FIELDS",
};
/// 1091 (42000): cannot drop a column or key that does not exist.
pub const ER_CANT_DROP_FIELD_OR_KEY: Code = Code {
    code: 1091,
    state: "42000",
    name: "ER_CANT_DROP_FIELD_OR_KEY",
};
/// 1094 (HY000): unknown thread id (KILL).
pub const ER_NO_SUCH_THREAD: Code = Code {
    code: 1094,
    state: "HY000",
    name: "ER_NO_SUCH_THREAD",
};
/// 1095 (HY000): not the owner of the thread (KILL).
pub const ER_KILL_DENIED_ERROR: Code = Code {
    code: 1095,
    state: "HY000",
    name: "ER_KILL_DENIED_ERROR",
};
/// 1096 (HY000): no tables used.
pub const ER_NO_TABLES_USED: Code = Code {
    code: 1096,
    state: "HY000",
    name: "ER_NO_TABLES_USED",
};
/// 1099 (HY000): table locked with a READ lock.
pub const ER_TABLE_NOT_LOCKED_FOR_WRITE: Code = Code {
    code: 1099,
    state: "HY000",
    name: "ER_TABLE_NOT_LOCKED_FOR_WRITE",
};
/// 1100 (HY000): table not locked with LOCK TABLES.
pub const ER_TABLE_NOT_LOCKED: Code = Code {
    code: 1100,
    state: "HY000",
    name: "ER_TABLE_NOT_LOCKED",
};
/// 1102 (42000): incorrect database name.
pub const ER_WRONG_DB_NAME: Code = Code {
    code: 1102,
    state: "42000",
    name: "ER_WRONG_DB_NAME",
};
/// 1103 (42000): incorrect table name.
pub const ER_WRONG_TABLE_NAME: Code = Code {
    code: 1103,
    state: "42000",
    name: "ER_WRONG_TABLE_NAME",
};
/// 1105 (HY000): unknown error.
pub const ER_UNKNOWN_ERROR: Code = Code {
    code: 1105,
    state: "HY000",
    name: "ER_UNKNOWN_ERROR",
};
/// 1109 (42S02): unknown table in a clause.
pub const ER_UNKNOWN_TABLE: Code = Code {
    code: 1109,
    state: "42S02",
    name: "ER_UNKNOWN_TABLE",
};
/// 1111 (HY000): invalid use of group function.
pub const ER_INVALID_GROUP_FUNC_USE: Code = Code {
    code: 1111,
    state: "HY000",
    name: "ER_INVALID_GROUP_FUNC_USE",
};
/// 1113 (42000): a table must have at least one column.
pub const ER_TABLE_MUST_HAVE_COLUMNS: Code = Code {
    code: 1113,
    state: "42000",
    name: "ER_TABLE_MUST_HAVE_COLUMNS",
};
/// 1115 (42000): unknown character set.
pub const ER_UNKNOWN_CHARACTER_SET: Code = Code {
    code: 1115,
    state: "42000",
    name: "ER_UNKNOWN_CHARACTER_SET",
};
/// 1117 (HY000): too many columns.
pub const ER_TOO_MANY_FIELDS: Code = Code {
    code: 1117,
    state: "HY000",
    name: "ER_TOO_MANY_FIELDS",
};
/// 1129 (HY000): host blocked after connection errors.
pub const ER_HOST_IS_BLOCKED: Code = Code {
    code: 1129,
    state: "HY000",
    name: "ER_HOST_IS_BLOCKED",
};
/// 1133 (28000): no matching account.
pub const ER_PASSWORD_NO_MATCH: Code = Code {
    code: 1133,
    state: "28000",
    name: "ER_PASSWORD_NO_MATCH",
};
/// 1136 (21S01): column count does not match value count.
pub const ER_WRONG_VALUE_COUNT_ON_ROW: Code = Code {
    code: 1136,
    state: "21S01",
    name: "ER_WRONG_VALUE_COUNT_ON_ROW",
};
/// 1141 (42000): no such grant.
pub const ER_NONEXISTING_GRANT: Code = Code {
    code: 1141,
    state: "42000",
    name: "ER_NONEXISTING_GRANT",
};
/// 1142 (42000): command denied on a table.
pub const ER_TABLEACCESS_DENIED_ERROR: Code = Code {
    code: 1142,
    state: "42000",
    name: "ER_TABLEACCESS_DENIED_ERROR",
};
/// 1144 (42000): illegal GRANT/REVOKE command.
pub const ER_ILLEGAL_GRANT_FOR_TABLE: Code = Code {
    code: 1144,
    state: "42000",
    name: "ER_ILLEGAL_GRANT_FOR_TABLE",
};
/// 1146 (42S02): table does not exist.
pub const ER_NO_SUCH_TABLE: Code = Code {
    code: 1146,
    state: "42S02",
    name: "ER_NO_SUCH_TABLE",
};
/// 1147 (42000): no such grant on a table.
pub const ER_NONEXISTING_TABLE_GRANT: Code = Code {
    code: 1147,
    state: "42000",
    name: "ER_NONEXISTING_TABLE_GRANT",
};
/// 1153 (08S01): packet bigger than max_allowed_packet.
pub const ER_NET_PACKET_TOO_LARGE: Code = Code {
    code: 1153,
    state: "08S01",
    name: "ER_NET_PACKET_TOO_LARGE",
};
/// 1156 (08S01): packets out of order.
pub const ER_NET_PACKETS_OUT_OF_ORDER: Code = Code {
    code: 1156,
    state: "08S01",
    name: "ER_NET_PACKETS_OUT_OF_ORDER",
};
/// 1172 (42000): `SELECT ... INTO` got more than one row.
pub const ER_TOO_MANY_ROWS: Code = Code {
    code: 1172,
    state: "42000",
    name: "ER_TOO_MANY_ROWS",
};
/// 1180 (HY000): error during commit.
pub const ER_ERROR_DURING_COMMIT: Code = Code {
    code: 1180,
    state: "HY000",
    name: "ER_ERROR_DURING_COMMIT",
};
/// 1192 (HY000): not allowed with active locks or an active transaction.
pub const ER_LOCK_OR_ACTIVE_TRANSACTION: Code = Code {
    code: 1192,
    state: "HY000",
    name: "ER_LOCK_OR_ACTIVE_TRANSACTION",
};
/// 1193 (HY000): unknown system variable.
pub const ER_UNKNOWN_SYSTEM_VARIABLE: Code = Code {
    code: 1193,
    state: "HY000",
    name: "ER_UNKNOWN_SYSTEM_VARIABLE",
};
/// 1197 (HY000): transaction bigger than max_binlog_cache_size.
pub const ER_TRANS_CACHE_FULL: Code = Code {
    code: 1197,
    state: "HY000",
    name: "ER_TRANS_CACHE_FULL",
};
/// 1203 (42000): account over max_user_connections.
pub const ER_TOO_MANY_USER_CONNECTIONS: Code = Code {
    code: 1203,
    state: "42000",
    name: "ER_TOO_MANY_USER_CONNECTIONS",
};
/// 1205 (HY000): lock wait timeout exceeded.
pub const ER_LOCK_WAIT_TIMEOUT: Code = Code {
    code: 1205,
    state: "HY000",
    name: "ER_LOCK_WAIT_TIMEOUT",
};
/// 1206 (HY000): too many row locks.
pub const ER_LOCK_TABLE_FULL: Code = Code {
    code: 1206,
    state: "HY000",
    name: "ER_LOCK_TABLE_FULL",
};
/// 1210 (HY000): incorrect arguments.
pub const ER_WRONG_ARGUMENTS: Code = Code {
    code: 1210,
    state: "HY000",
    name: "ER_WRONG_ARGUMENTS",
};
/// 1213 (40001): deadlock found.
pub const ER_LOCK_DEADLOCK: Code = Code {
    code: 1213,
    state: "40001",
    name: "ER_LOCK_DEADLOCK",
};
/// 1221 (HY000): incorrect usage of two clauses.
pub const ER_WRONG_USAGE: Code = Code {
    code: 1221,
    state: "HY000",
    name: "ER_WRONG_USAGE",
};
/// 1222 (21000): set operation members with different column counts.
pub const ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: Code = Code {
    code: 1222,
    state: "21000",
    name: "ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT",
};
/// 1223 (HY000): a read lock is held.
pub const ER_CANT_UPDATE_WITH_READLOCK: Code = Code {
    code: 1223,
    state: "HY000",
    name: "ER_CANT_UPDATE_WITH_READLOCK",
};
/// 1227 (42000): a named privilege is needed.
pub const ER_SPECIFIC_ACCESS_DENIED_ERROR: Code = Code {
    code: 1227,
    state: "42000",
    name: "ER_SPECIFIC_ACCESS_DENIED_ERROR",
};
/// 1228 (HY000): session-only variable set as global.
pub const ER_LOCAL_VARIABLE: Code = Code {
    code: 1228,
    state: "HY000",
    name: "ER_LOCAL_VARIABLE",
};
/// 1229 (HY000): global-only variable set as session.
pub const ER_GLOBAL_VARIABLE: Code = Code {
    code: 1229,
    state: "HY000",
    name: "ER_GLOBAL_VARIABLE",
};
/// 1231 (42000): variable cannot be set to the value.
pub const ER_WRONG_VALUE_FOR_VAR: Code = Code {
    code: 1231,
    state: "42000",
    name: "ER_WRONG_VALUE_FOR_VAR",
};
/// 1232 (42000): incorrect argument type to a variable.
pub const ER_WRONG_TYPE_FOR_VAR: Code = Code {
    code: 1232,
    state: "42000",
    name: "ER_WRONG_TYPE_FOR_VAR",
};
/// 1235 (42000): not supported (yet).
pub const ER_NOT_SUPPORTED_YET: Code = Code {
    code: 1235,
    state: "42000",
    name: "ER_NOT_SUPPORTED_YET",
};
/// 1238 (HY000): variable of the other scope.
pub const ER_INCORRECT_GLOBAL_LOCAL_VAR: Code = Code {
    code: 1238,
    state: "HY000",
    name: "ER_INCORRECT_GLOBAL_LOCAL_VAR",
};
/// 1239 (42000): incorrect foreign key definition.
pub const ER_WRONG_FK_DEF: Code = Code {
    code: 1239,
    state: "42000",
    name: "ER_WRONG_FK_DEF",
};
/// 1241 (21000): operand with the wrong number of columns.
pub const ER_OPERAND_COLUMNS: Code = Code {
    code: 1241,
    state: "21000",
    name: "ER_OPERAND_COLUMNS",
};
/// 1242 (21000): subquery returns more than one row.
pub const ER_SUBQUERY_NO_1_ROW: Code = Code {
    code: 1242,
    state: "21000",
    name: "ER_SUBQUERY_NO_1_ROW",
};
/// 1243 (HY000): unknown prepared statement handler.
pub const ER_UNKNOWN_STMT_HANDLER: Code = Code {
    code: 1243,
    state: "HY000",
    name: "ER_UNKNOWN_STMT_HANDLER",
};
/// 1248 (42000): derived table without an alias.
pub const ER_DERIVED_MUST_HAVE_ALIAS: Code = Code {
    code: 1248,
    state: "42000",
    name: "ER_DERIVED_MUST_HAVE_ALIAS",
};
/// 1253 (42000): collation not valid for the character set.
pub const ER_COLLATION_CHARSET_MISMATCH: Code = Code {
    code: 1253,
    state: "42000",
    name: "ER_COLLATION_CHARSET_MISMATCH",
};
/// 1260 (HY000): a GROUP_CONCAT result cut to group_concat_max_len (a warning).
pub const ER_CUT_VALUE_GROUP_CONCAT: Code = Code {
    code: 1260,
    state: "HY000",
    name: "ER_CUT_VALUE_GROUP_CONCAT",
};
/// 1264 (22003): out of range value for a column.
pub const ER_WARN_DATA_OUT_OF_RANGE: Code = Code {
    code: 1264,
    state: "22003",
    name: "ER_WARN_DATA_OUT_OF_RANGE",
};
/// 1265 (01000): data truncated for a column.
pub const WARN_DATA_TRUNCATED: Code = Code {
    code: 1265,
    state: "01000",
    name: "WARN_DATA_TRUNCATED",
};
/// 1273 (HY000): unknown collation.
pub const ER_UNKNOWN_COLLATION: Code = Code {
    code: 1273,
    state: "HY000",
    name: "ER_UNKNOWN_COLLATION",
};
/// 1290 (HY000): an option prevents the statement (read_only, a memory bound).
pub const ER_OPTION_PREVENTS_STATEMENT: Code = Code {
    code: 1290,
    state: "HY000",
    name: "ER_OPTION_PREVENTS_STATEMENT",
};
/// 1292 (22007): incorrect value truncated.
pub const ER_TRUNCATED_WRONG_VALUE: Code = Code {
    code: 1292,
    state: "22007",
    name: "ER_TRUNCATED_WRONG_VALUE",
};
/// 1295 (HY000): a statement the prepared statement protocol cannot prepare.
pub const ER_UNSUPPORTED_PS: Code = Code {
    code: 1295,
    state: "HY000",
    name: "ER_UNSUPPORTED_PS",
};
/// 1300 (HY000): bytes that are not a string of the character set (a warning of CAST).
pub const ER_INVALID_CHARACTER_STRING: Code = Code {
    code: 1300,
    state: "HY000",
    name: "ER_INVALID_CHARACTER_STRING",
};
/// 1301 (HY000): a result larger than max_allowed_packet (a warning).
pub const ER_WARN_ALLOWED_PACKET_OVERFLOWED: Code = Code {
    code: 1301,
    state: "HY000",
    name: "ER_WARN_ALLOWED_PACKET_OVERFLOWED",
};
/// 1305 (42000): function does not exist.
pub const ER_SP_DOES_NOT_EXIST: Code = Code {
    code: 1305,
    state: "42000",
    name: "ER_SP_DOES_NOT_EXIST",
};
/// 1317 (70100): query execution was interrupted.
pub const ER_QUERY_INTERRUPTED: Code = Code {
    code: 1317,
    state: "70100",
    name: "ER_QUERY_INTERRUPTED",
};
/// 1327 (42000): an undeclared (stored program) variable.
pub const ER_SP_UNDECLARED_VAR: Code = Code {
    code: 1327,
    state: "42000",
    name: "ER_SP_UNDECLARED_VAR",
};
/// 1329 (02000): no data: `SELECT ... INTO` got no row (a warning).
pub const ER_SP_FETCH_NO_DATA: Code = Code {
    code: 1329,
    state: "02000",
    name: "ER_SP_FETCH_NO_DATA",
};
/// 1364 (HY000): column has no default value.
pub const ER_NO_DEFAULT_FOR_FIELD: Code = Code {
    code: 1364,
    state: "HY000",
    name: "ER_NO_DEFAULT_FOR_FIELD",
};
/// 1365 (22012): division by zero.
pub const ER_DIVISION_BY_ZERO: Code = Code {
    code: 1365,
    state: "22012",
    name: "ER_DIVISION_BY_ZERO",
};
/// 1366 (22007, as MariaDB sends it; MySQL 8 says HY000): incorrect value for a column.
pub const ER_TRUNCATED_WRONG_VALUE_FOR_FIELD: Code = Code {
    code: 1366,
    state: "22007",
    name: "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD",
};
/// 1372 (HY000): password hash of the wrong length.
pub const ER_PASSWD_LENGTH: Code = Code {
    code: 1372,
    state: "HY000",
    name: "ER_PASSWD_LENGTH",
};
/// 1390 (HY000): prepared statement with too many placeholders.
pub const ER_PS_MANY_PARAM: Code = Code {
    code: 1390,
    state: "HY000",
    name: "ER_PS_MANY_PARAM",
};
/// 1396 (HY000): operation failed for an account.
pub const ER_CANNOT_USER: Code = Code {
    code: 1396,
    state: "HY000",
    name: "ER_CANNOT_USER",
};
/// 1406 (22001): data too long for a column.
pub const ER_DATA_TOO_LONG: Code = Code {
    code: 1406,
    state: "22001",
    name: "ER_DATA_TOO_LONG",
};
/// 1410 (42000): GRANT may not create an account.
pub const ER_CANT_CREATE_USER_WITH_GRANT: Code = Code {
    code: 1410,
    state: "42000",
    name: "ER_CANT_CREATE_USER_WITH_GRANT",
};
/// 1411 (HY000): incorrect value for a function (a warning).
pub const ER_WRONG_VALUE_FOR_TYPE: Code = Code {
    code: 1411,
    state: "HY000",
    name: "ER_WRONG_VALUE_FOR_TYPE",
};
/// 1425 (42000): scale too big.
pub const ER_TOO_BIG_SCALE: Code = Code {
    code: 1425,
    state: "42000",
    name: "ER_TOO_BIG_SCALE",
};
/// 1426 (42000): precision too big.
pub const ER_TOO_BIG_PRECISION: Code = Code {
    code: 1426,
    state: "42000",
    name: "ER_TOO_BIG_PRECISION",
};
/// 1427 (42000): FLOAT(M,D) / DECIMAL(M,D) with D greater than M.
pub const ER_M_BIGGER_THAN_D: Code = Code {
    code: 1427,
    state: "42000",
    name: "ER_M_BIGGER_THAN_D",
};
/// 1436 (HY000): thread stack overrun (expression too deep).
pub const ER_STACK_OVERRUN_NEED_MORE: Code = Code {
    code: 1436,
    state: "HY000",
    name: "ER_STACK_OVERRUN_NEED_MORE",
};
/// 1441 (22008): datetime function overflow.
pub const ER_DATETIME_FUNCTION_OVERFLOW: Code = Code {
    code: 1441,
    state: "22008",
    name: "ER_DATETIME_FUNCTION_OVERFLOW",
};
/// 1451 (23000): a foreign key references the row.
pub const ER_ROW_IS_REFERENCED_2: Code = Code {
    code: 1451,
    state: "23000",
    name: "ER_ROW_IS_REFERENCED_2",
};
/// 1452 (23000): no parent row for a foreign key.
pub const ER_NO_REFERENCED_ROW_2: Code = Code {
    code: 1452,
    state: "23000",
    name: "ER_NO_REFERENCED_ROW_2",
};
/// 1461 (42000): max_prepared_stmt_count reached.
pub const ER_MAX_PREPARED_STMT_COUNT_REACHED: Code = Code {
    code: 1461,
    state: "42000",
    name: "ER_MAX_PREPARED_STMT_COUNT_REACHED",
};
/// 1524 (HY000): plugin not loaded.
pub const ER_PLUGIN_IS_NOT_LOADED: Code = Code {
    code: 1524,
    state: "HY000",
    name: "ER_PLUGIN_IS_NOT_LOADED",
};
/// 1525 (HY000): incorrect value (a typed literal).
pub const ER_WRONG_VALUE: Code = Code {
    code: 1525,
    state: "HY000",
    name: "ER_WRONG_VALUE",
};
/// 1553 (HY000): index needed by a foreign key.
pub const ER_DROP_INDEX_FK: Code = Code {
    code: 1553,
    state: "HY000",
    name: "ER_DROP_INDEX_FK",
};
/// 1568 (25001): transaction characteristics changed inside a transaction.
pub const ER_CANT_CHANGE_TX_CHARACTERISTICS: Code = Code {
    code: 1568,
    state: "25001",
    name: "ER_CANT_CHANGE_TX_CHARACTERISTICS",
};
/// 1582 (42000): wrong argument count to a native function.
pub const ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT: Code = Code {
    code: 1582,
    state: "42000",
    name: "ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT",
};
/// 1583 (42000): incorrect parameters to a native function.
pub const ER_WRONG_PARAMETERS_TO_NATIVE_FCT: Code = Code {
    code: 1583,
    state: "42000",
    name: "ER_WRONG_PARAMETERS_TO_NATIVE_FCT",
};
/// 1621 (HY000): session value cannot be set.
pub const ER_VARIABLE_IS_READONLY: Code = Code {
    code: 1621,
    state: "HY000",
    name: "ER_VARIABLE_IS_READONLY",
};
/// 1690 (22003): value out of range.
pub const ER_DATA_OUT_OF_RANGE: Code = Code {
    code: 1690,
    state: "22003",
    name: "ER_DATA_OUT_OF_RANGE",
};
/// 1792 (25006): write in a READ ONLY transaction.
pub const ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: Code = Code {
    code: 1792,
    state: "25006",
    name: "ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION",
};
/// 1822 (HY000): no index on the referenced columns.
pub const ER_FK_NO_INDEX_PARENT: Code = Code {
    code: 1822,
    state: "HY000",
    name: "ER_FK_NO_INDEX_PARENT",
};
/// 1824 (HY000): referenced table does not exist.
pub const ER_FK_CANNOT_OPEN_PARENT: Code = Code {
    code: 1824,
    state: "HY000",
    name: "ER_FK_CANNOT_OPEN_PARENT",
};
/// 1826 (HY000): duplicate foreign key constraint name.
pub const ER_FK_DUP_NAME: Code = Code {
    code: 1826,
    state: "HY000",
    name: "ER_FK_DUP_NAME",
};
/// 1827 (HY000): password hash in the wrong format.
pub const ER_PASSWORD_FORMAT: Code = Code {
    code: 1827,
    state: "HY000",
    name: "ER_PASSWORD_FORMAT",
};
/// 1829 (HY000): column needed by a foreign key.
pub const ER_FK_COLUMN_CANNOT_DROP: Code = Code {
    code: 1829,
    state: "HY000",
    name: "ER_FK_COLUMN_CANNOT_DROP",
};
/// 1830 (HY000): a SET NULL foreign key column is NOT NULL.
pub const ER_FK_COLUMN_NOT_NULL: Code = Code {
    code: 1830,
    state: "HY000",
    name: "ER_FK_COLUMN_NOT_NULL",
};
/// 1832 (HY000): column used in a foreign key cannot change.
pub const ER_FK_COLUMN_CANNOT_CHANGE: Code = Code {
    code: 1832,
    state: "HY000",
    name: "ER_FK_COLUMN_CANNOT_CHANGE",
};
/// 1833 (HY000): referenced column cannot change.
pub const ER_FK_COLUMN_CANNOT_CHANGE_CHILD: Code = Code {
    code: 1833,
    state: "HY000",
    name: "ER_FK_COLUMN_CANNOT_CHANGE_CHILD",
};
/// 1835 (HY000): malformed communication packet.
pub const ER_MALFORMED_PACKET: Code = Code {
    code: 1835,
    state: "HY000",
    name: "ER_MALFORMED_PACKET",
};
/// 1970 (42000): a subquery where only a value may be (PREPARE ... FROM, EXECUTE ... USING;
/// MariaDB).
pub const ER_SUBQUERIES_NOT_SUPPORTED: Code = Code {
    code: 1970,
    state: "42000",
    name: "ER_SUBQUERIES_NOT_SUPPORTED",
};
/// 3008 (HY000): foreign key cascade too deep.
pub const ER_FK_DEPTH_EXCEEDED: Code = Code {
    code: 3008,
    state: "HY000",
    name: "ER_FK_DEPTH_EXCEEDED",
};
/// 3024 (HY000): max_execution_time exceeded.
pub const ER_QUERY_TIMEOUT: Code = Code {
    code: 3024,
    state: "HY000",
    name: "ER_QUERY_TIMEOUT",
};
/// 3118 (HY000): account locked.
pub const ER_ACCOUNT_HAS_BEEN_LOCKED: Code = Code {
    code: 3118,
    state: "HY000",
    name: "ER_ACCOUNT_HAS_BEEN_LOCKED",
};
/// 3159 (HY000): insecure transport with require_secure_transport.
pub const ER_SECURE_TRANSPORT_REQUIRED: Code = Code {
    code: 3159,
    state: "HY000",
    name: "ER_SECURE_TRANSPORT_REQUIRED",
};
/// 3162 (HY000): account does not exist (a note).
pub const ER_USER_DOES_NOT_EXIST: Code = Code {
    code: 3162,
    state: "HY000",
    name: "ER_USER_DOES_NOT_EXIST",
};
/// 3163 (HY000): account already exists (a note).
pub const ER_USER_ALREADY_EXISTS: Code = Code {
    code: 3163,
    state: "HY000",
    name: "ER_USER_ALREADY_EXISTS",
};
/// 3730 (HY000): table referenced by a foreign key.
pub const ER_FK_CANNOT_DROP_PARENT: Code = Code {
    code: 3730,
    state: "HY000",
    name: "ER_FK_CANNOT_DROP_PARENT",
};
/// 3780 (HY000): referencing and referenced columns incompatible.
pub const ER_FK_INCOMPATIBLE_COLUMNS: Code = Code {
    code: 3780,
    state: "HY000",
    name: "ER_FK_INCOMPATIBLE_COLUMNS",
};
/// 4002 (HY000): CTE column list of another length (MariaDB).
pub const ER_WITH_COL_WRONG_LIST: Code = Code {
    code: 4002,
    state: "HY000",
    name: "ER_WITH_COL_WRONG_LIST",
};
/// 4004 (HY000): duplicate CTE name (MariaDB).
pub const ER_DUP_QUERY_NAME: Code = Code {
    code: 4004,
    state: "HY000",
    name: "ER_DUP_QUERY_NAME",
};
/// 4005 (HY000): recursive CTE without anchor (MariaDB).
pub const ER_RECURSIVE_WITHOUT_ANCHORS: Code = Code {
    code: 4005,
    state: "HY000",
    name: "ER_RECURSIVE_WITHOUT_ANCHORS",
};
/// 4008 (HY000): recursive CTE restriction violated (MariaDB).
pub const ER_NOT_STANDARD_COMPLIANT_RECURSIVE: Code = Code {
    code: 4008,
    state: "HY000",
    name: "ER_NOT_STANDARD_COMPLIANT_RECURSIVE",
};
/// 4031 (HY000): idle connection closed.
pub const ER_CLIENT_INTERACTION_TIMEOUT: Code = Code {
    code: 4031,
    state: "HY000",
    name: "ER_CLIENT_INTERACTION_TIMEOUT",
};
/// 4083 (HY000): global connection memory limit exceeded.
pub const ER_DA_GLOBAL_CONN_LIMIT: Code = Code {
    code: 4083,
    state: "HY000",
    name: "ER_DA_GLOBAL_CONN_LIMIT",
};
/// Every error of the table, by number.
pub const ALL: &[Code] = &[
    ER_DB_CREATE_EXISTS,
    ER_DB_DROP_EXISTS,
    ER_DISK_FULL,
    ER_GET_ERRNO,
    ER_ILLEGAL_HA,
    ER_OUT_OF_SORTMEMORY,
    ER_CON_COUNT_ERROR,
    ER_HANDSHAKE_ERROR,
    ER_DBACCESS_DENIED_ERROR,
    ER_ACCESS_DENIED_ERROR,
    ER_NO_DB_ERROR,
    ER_UNKNOWN_COM_ERROR,
    ER_BAD_NULL_ERROR,
    ER_BAD_DB_ERROR,
    ER_TABLE_EXISTS_ERROR,
    ER_BAD_TABLE_ERROR,
    ER_NON_UNIQ_ERROR,
    ER_SERVER_SHUTDOWN,
    ER_BAD_FIELD_ERROR,
    ER_DUP_FIELDNAME,
    ER_DUP_KEYNAME,
    ER_DUP_ENTRY,
    ER_WRONG_FIELD_SPEC,
    ER_PARSE_ERROR,
    ER_EMPTY_QUERY,
    ER_NONUNIQ_TABLE,
    ER_INVALID_DEFAULT,
    ER_MULTIPLE_PRI_KEY,
    ER_KEY_COLUMN_DOES_NOT_EXITS,
    ER_TOO_BIG_FIELDLENGTH,
    ER_FILE_EXISTS_ERROR,
    ER_CANT_REMOVE_ALL_FIELDS,
    ER_CANT_DROP_FIELD_OR_KEY,
    ER_NO_SUCH_THREAD,
    ER_KILL_DENIED_ERROR,
    ER_NO_TABLES_USED,
    ER_TABLE_NOT_LOCKED_FOR_WRITE,
    ER_TABLE_NOT_LOCKED,
    ER_WRONG_DB_NAME,
    ER_WRONG_TABLE_NAME,
    ER_UNKNOWN_ERROR,
    ER_UNKNOWN_TABLE,
    ER_INVALID_GROUP_FUNC_USE,
    ER_TABLE_MUST_HAVE_COLUMNS,
    ER_UNKNOWN_CHARACTER_SET,
    ER_TOO_MANY_FIELDS,
    ER_HOST_IS_BLOCKED,
    ER_PASSWORD_NO_MATCH,
    ER_WRONG_VALUE_COUNT_ON_ROW,
    ER_NONEXISTING_GRANT,
    ER_TABLEACCESS_DENIED_ERROR,
    ER_ILLEGAL_GRANT_FOR_TABLE,
    ER_NO_SUCH_TABLE,
    ER_NONEXISTING_TABLE_GRANT,
    ER_NET_PACKET_TOO_LARGE,
    ER_NET_PACKETS_OUT_OF_ORDER,
    ER_TOO_MANY_ROWS,
    ER_ERROR_DURING_COMMIT,
    ER_LOCK_OR_ACTIVE_TRANSACTION,
    ER_UNKNOWN_SYSTEM_VARIABLE,
    ER_TRANS_CACHE_FULL,
    ER_TOO_MANY_USER_CONNECTIONS,
    ER_LOCK_WAIT_TIMEOUT,
    ER_LOCK_TABLE_FULL,
    ER_WRONG_ARGUMENTS,
    ER_LOCK_DEADLOCK,
    ER_WRONG_USAGE,
    ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
    ER_CANT_UPDATE_WITH_READLOCK,
    ER_SPECIFIC_ACCESS_DENIED_ERROR,
    ER_LOCAL_VARIABLE,
    ER_GLOBAL_VARIABLE,
    ER_WRONG_VALUE_FOR_VAR,
    ER_WRONG_TYPE_FOR_VAR,
    ER_NOT_SUPPORTED_YET,
    ER_INCORRECT_GLOBAL_LOCAL_VAR,
    ER_WRONG_FK_DEF,
    ER_OPERAND_COLUMNS,
    ER_SUBQUERY_NO_1_ROW,
    ER_UNKNOWN_STMT_HANDLER,
    ER_DERIVED_MUST_HAVE_ALIAS,
    ER_COLLATION_CHARSET_MISMATCH,
    ER_CUT_VALUE_GROUP_CONCAT,
    ER_WARN_DATA_OUT_OF_RANGE,
    WARN_DATA_TRUNCATED,
    ER_UNKNOWN_COLLATION,
    ER_OPTION_PREVENTS_STATEMENT,
    ER_TRUNCATED_WRONG_VALUE,
    ER_UNSUPPORTED_PS,
    ER_INVALID_CHARACTER_STRING,
    ER_WARN_ALLOWED_PACKET_OVERFLOWED,
    ER_SP_DOES_NOT_EXIST,
    ER_QUERY_INTERRUPTED,
    ER_SP_UNDECLARED_VAR,
    ER_SP_FETCH_NO_DATA,
    ER_NO_DEFAULT_FOR_FIELD,
    ER_DIVISION_BY_ZERO,
    ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
    ER_PASSWD_LENGTH,
    ER_PS_MANY_PARAM,
    ER_CANNOT_USER,
    ER_DATA_TOO_LONG,
    ER_CANT_CREATE_USER_WITH_GRANT,
    ER_WRONG_VALUE_FOR_TYPE,
    ER_TOO_BIG_SCALE,
    ER_TOO_BIG_PRECISION,
    ER_M_BIGGER_THAN_D,
    ER_STACK_OVERRUN_NEED_MORE,
    ER_DATETIME_FUNCTION_OVERFLOW,
    ER_ROW_IS_REFERENCED_2,
    ER_NO_REFERENCED_ROW_2,
    ER_MAX_PREPARED_STMT_COUNT_REACHED,
    ER_PLUGIN_IS_NOT_LOADED,
    ER_WRONG_VALUE,
    ER_DROP_INDEX_FK,
    ER_CANT_CHANGE_TX_CHARACTERISTICS,
    ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT,
    ER_WRONG_PARAMETERS_TO_NATIVE_FCT,
    ER_VARIABLE_IS_READONLY,
    ER_DATA_OUT_OF_RANGE,
    ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION,
    ER_FK_NO_INDEX_PARENT,
    ER_FK_CANNOT_OPEN_PARENT,
    ER_FK_DUP_NAME,
    ER_PASSWORD_FORMAT,
    ER_FK_COLUMN_CANNOT_DROP,
    ER_FK_COLUMN_NOT_NULL,
    ER_FK_COLUMN_CANNOT_CHANGE,
    ER_FK_COLUMN_CANNOT_CHANGE_CHILD,
    ER_MALFORMED_PACKET,
    ER_SUBQUERIES_NOT_SUPPORTED,
    ER_FK_DEPTH_EXCEEDED,
    ER_QUERY_TIMEOUT,
    ER_ACCOUNT_HAS_BEEN_LOCKED,
    ER_SECURE_TRANSPORT_REQUIRED,
    ER_USER_DOES_NOT_EXIST,
    ER_USER_ALREADY_EXISTS,
    ER_FK_CANNOT_DROP_PARENT,
    ER_FK_INCOMPATIBLE_COLUMNS,
    ER_WITH_COL_WRONG_LIST,
    ER_DUP_QUERY_NAME,
    ER_RECURSIVE_WITHOUT_ANCHORS,
    ER_NOT_STANDARD_COMPLIANT_RECURSIVE,
    ER_CLIENT_INTERACTION_TIMEOUT,
    ER_DA_GLOBAL_CONN_LIMIT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_unique_ordered_and_states_well_formed() {
        for w in ALL.windows(2) {
            assert!(w[0].code < w[1].code, "{} before {}", w[0].name, w[1].name);
        }
        for c in ALL {
            assert_eq!(c.state.len(), 5, "{}", c.name);
            assert!(c
                .state
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()));
            assert_eq!(Code::of(c.code), Some(*c));
        }
        assert_eq!(Code::of(1146).map(|c| c.name), Some("ER_NO_SUCH_TABLE"));
        assert_eq!(Code::of(9999), None);
    }
}
