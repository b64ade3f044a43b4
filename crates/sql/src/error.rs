//! Errors of the SQL layer, each with its MySQL error code and SQLSTATE.

use crate::catalog::CatalogError;

/// An error raised while parsing, translating, planning or evaluating SQL.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SqlError {
    /// 1064: the text is not SQL we can parse.
    #[error("You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '{0}'")]
    Syntax(String),
    /// 1065: nothing but whitespace or comments.
    #[error("Query was empty")]
    EmptyQuery,
    /// 1235: valid SQL that shoal does not implement (yet).
    #[error("This version of shoal doesn't yet support '{0}'")]
    Unsupported(String),
    /// 1690: numeric overflow.
    #[error("{0} value is out of range in '{1}'")]
    OutOfRange(&'static str, String),
    /// 1305: unknown function.
    #[error("FUNCTION {0} does not exist")]
    UnknownFunction(String),
    /// 1582: wrong argument count for a native function.
    #[error("Incorrect parameter count in the call to native function '{0}'")]
    ParamCount(String),
    /// 1054: unknown column.
    #[error("Unknown column '{0}' in '{1}'")]
    UnknownColumn(String, String),
    /// 1146: unknown table.
    #[error("Table '{0}.{1}' doesn't exist")]
    NoSuchTable(String, String),
    /// 1046: no database selected.
    #[error("No database selected")]
    NoDatabase,
    /// 1049.
    #[error("Unknown database '{0}'")]
    UnknownDatabase(String),
    /// 1317: the statement was killed (KILL QUERY).
    #[error("Query execution was interrupted")]
    Interrupted,
    /// 1210: wrong arguments to EXECUTE / parameter count mismatch.
    #[error("Incorrect arguments to {0}")]
    WrongArguments(String),
    /// 1241 (21000): an operand with the wrong number of columns (e.g. `SELECT (1,2)`).
    #[error("Operand should contain {0} column(s)")]
    OperandColumns(usize),
    /// Errors of variables, catalog or the server, already carrying their code.
    #[error("{message}")]
    Other {
        /// MySQL error code.
        code: u16,
        /// SQLSTATE.
        state: &'static str,
        /// Message.
        message: String,
    },
}

impl SqlError {
    /// MySQL error code.
    pub fn code(&self) -> u16 {
        match self {
            SqlError::Syntax(_) => 1064,
            SqlError::EmptyQuery => 1065,
            SqlError::Unsupported(_) => 1235,
            SqlError::OutOfRange(..) => 1690,
            SqlError::UnknownFunction(_) => 1305,
            SqlError::ParamCount(_) => 1582,
            SqlError::UnknownColumn(..) => 1054,
            SqlError::NoSuchTable(..) => 1146,
            SqlError::NoDatabase => 1046,
            SqlError::UnknownDatabase(_) => 1049,
            SqlError::Interrupted => 1317,
            SqlError::WrongArguments(_) => 1210,
            SqlError::OperandColumns(_) => 1241,
            SqlError::Other { code, .. } => *code,
        }
    }

    /// SQLSTATE.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            SqlError::Syntax(_) | SqlError::Unsupported(_) | SqlError::UnknownFunction(_) => {
                "42000"
            }
            SqlError::EmptyQuery | SqlError::ParamCount(_) | SqlError::UnknownDatabase(_) => {
                "42000"
            }
            SqlError::OutOfRange(..) => "22003",
            SqlError::UnknownColumn(..) => "42S22",
            SqlError::NoSuchTable(..) => "42S02",
            SqlError::NoDatabase => "3D000",
            SqlError::Interrupted => "70100",
            SqlError::WrongArguments(_) => "HY000",
            SqlError::OperandColumns(_) => "21000",
            SqlError::Other { state, .. } => state,
        }
    }

    /// A coded error from another layer.
    pub fn other(code: u16, state: &'static str, message: impl Into<String>) -> Self {
        SqlError::Other {
            code,
            state,
            message: message.into(),
        }
    }
}

impl From<CatalogError> for SqlError {
    fn from(e: CatalogError) -> Self {
        SqlError::other(e.code(), e.sqlstate(), e.to_string())
    }
}
