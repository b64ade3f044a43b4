//! Character sets and collations the session accepts and shows: SET NAMES and SET CHARACTER
//! SET (which set the `character_set_*` / `collation_connection` variables; strings are UTF-8
//! inside whatever the client names) and the tables of SHOW CHARACTER SET / SHOW COLLATION.

use shoal_proto::Response;
use shoal_sql::SqlError;

use super::variables::var_err;
use super::wire::ok;
use super::Session;
use crate::vars::SetValue;

/// Character sets we accept in SET NAMES / SET CHARACTER SET, with their default collation.
pub(super) const CHARSETS: &[(&str, &str, &str, u32)] = &[
    ("utf8mb4", "utf8mb4_general_ci", "UTF-8 Unicode", 4),
    ("utf8mb3", "utf8mb3_general_ci", "UTF-8 Unicode", 3),
    ("utf8", "utf8mb3_general_ci", "UTF-8 Unicode", 3),
    ("latin1", "latin1_swedish_ci", "cp1252 West European", 1),
    ("ascii", "ascii_general_ci", "US ASCII", 1),
    ("binary", "binary", "Binary pseudo charset", 1),
];

/// Collations: (name, charset, id, default).
pub(super) const COLLATIONS: &[(&str, &str, u32, bool)] = &[
    ("ascii_general_ci", "ascii", 11, true),
    ("binary", "binary", 63, true),
    ("latin1_swedish_ci", "latin1", 8, true),
    ("latin1_bin", "latin1", 47, false),
    ("utf8mb3_general_ci", "utf8mb3", 33, true),
    ("utf8mb3_bin", "utf8mb3", 83, false),
    ("utf8mb4_general_ci", "utf8mb4", 45, false),
    ("utf8mb4_bin", "utf8mb4", 46, false),
    ("utf8mb4_unicode_ci", "utf8mb4", 224, false),
    ("utf8mb4_0900_ai_ci", "utf8mb4", 255, true),
];

impl Session {
    /// `SET NAMES cs [COLLATE coll]`: the client, connection and result character sets and the
    /// connection collation (1273 unknown, 1253 not of `cs`).
    pub(super) fn set_names(
        &mut self,
        cs: &Option<String>,
        coll: &Option<String>,
    ) -> Result<Response, SqlError> {
        let (cs, default_coll) = self.charset(cs.as_deref())?;
        let coll = match coll {
            Some(c) => {
                let found = COLLATIONS
                    .iter()
                    .find(|x| x.0.eq_ignore_ascii_case(c))
                    .ok_or_else(|| {
                        SqlError::coded(
                            shoal_errors::ER_UNKNOWN_COLLATION,
                            format!("Unknown collation: '{c}'"),
                        )
                    })?;
                let same =
                    found.1.eq_ignore_ascii_case(&cs) || (cs == "utf8" && found.1 == "utf8mb3");
                if !same {
                    return Err(SqlError::coded(
                        shoal_errors::ER_COLLATION_CHARSET_MISMATCH,
                        format!(
                            "COLLATION '{}' is not valid for CHARACTER SET '{cs}'",
                            found.0
                        ),
                    ));
                }
                found.0.to_string()
            }
            None => default_coll,
        };
        let vars = &self.server.vars;
        for n in [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ] {
            self.vars
                .set(vars, n, &SetValue::Str(cs.clone()))
                .map_err(var_err)?;
        }
        self.vars
            .set(vars, "collation_connection", &SetValue::Str(coll))
            .map_err(var_err)?;
        Ok(ok(0))
    }

    /// `SET CHARACTER SET cs`: client and result character sets; the connection's becomes the
    /// database's.
    pub(super) fn set_charset(&mut self, cs: &Option<String>) -> Result<Response, SqlError> {
        let (cs, _) = self.charset(cs.as_deref())?;
        let vars = &self.server.vars;
        for n in ["character_set_client", "character_set_results"] {
            self.vars
                .set(vars, n, &SetValue::Str(cs.clone()))
                .map_err(var_err)?;
        }
        let db_cs = self
            .vars
            .get(vars, "character_set_database")
            .map_err(var_err)?
            .display();
        self.vars
            .set(vars, "character_set_connection", &SetValue::Str(db_cs))
            .map_err(var_err)?;
        Ok(ok(0))
    }

    /// The character set named (default `utf8mb4`; `utf8` is `utf8mb3`) and the collation it
    /// brings, or 1115 for one shoal does not know.
    fn charset(&self, cs: Option<&str>) -> Result<(String, String), SqlError> {
        let cs = match cs {
            Some(c) => c.to_string(),
            None => "utf8mb4".to_string(),
        };
        let found = CHARSETS
            .iter()
            .find(|x| x.0.eq_ignore_ascii_case(&cs))
            .ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_UNKNOWN_CHARACTER_SET,
                    format!("Unknown character set: '{cs}'"),
                )
            })?;
        let name = if found.0 == "utf8" {
            "utf8mb3"
        } else {
            found.0
        };
        let coll = if found.0 == "utf8mb4" {
            "utf8mb4_general_ci"
        } else {
            found.1
        };
        Ok((name.to_string(), coll.to_string()))
    }
}
