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
    /// The table entry of this error.
    pub fn error_code(&self) -> shoal_errors::Code {
        use shoal_errors as er;
        match self {
            SqlError::Syntax(_) => er::ER_PARSE_ERROR,
            SqlError::EmptyQuery => er::ER_EMPTY_QUERY,
            SqlError::Unsupported(_) => er::ER_NOT_SUPPORTED_YET,
            SqlError::OutOfRange(..) => er::ER_DATA_OUT_OF_RANGE,
            SqlError::UnknownFunction(_) => er::ER_SP_DOES_NOT_EXIST,
            SqlError::ParamCount(_) => er::ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT,
            SqlError::UnknownColumn(..) => er::ER_BAD_FIELD_ERROR,
            SqlError::NoSuchTable(..) => er::ER_NO_SUCH_TABLE,
            SqlError::NoDatabase => er::ER_NO_DB_ERROR,
            SqlError::UnknownDatabase(_) => er::ER_BAD_DB_ERROR,
            SqlError::Interrupted => er::ER_QUERY_INTERRUPTED,
            SqlError::WrongArguments(_) => er::ER_WRONG_ARGUMENTS,
            SqlError::OperandColumns(_) => er::ER_OPERAND_COLUMNS,
            SqlError::Other { code, state, .. } => shoal_errors::Code {
                code: *code,
                state,
                name: shoal_errors::Code::of(*code).map_or("", |c| c.name),
            },
        }
    }

    /// MySQL error code.
    pub fn code(&self) -> u16 {
        self.error_code().code
    }

    /// SQLSTATE.
    pub fn sqlstate(&self) -> &'static str {
        self.error_code().state
    }

    /// An error of the table with its message.
    pub fn coded(code: shoal_errors::Code, message: impl Into<String>) -> Self {
        SqlError::Other {
            code: code.code,
            state: code.state,
            message: message.into(),
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
