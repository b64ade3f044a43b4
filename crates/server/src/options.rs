//! Startup options, spelled like mysqld's: command-line flags and a my.cnf-style option file.
//!
//! # How it works
//!
//! Options are collected into an ordered list of `(name, value)` pairs and then applied one by
//! one through `Server::set_startup_option` (the session crate owns the variable registry, so it
//! decides what is a valid name and value). Order of application: the option file(s) first, then
//! the command line, so a flag overrides the file, as in mysqld.
//!
//! Command-line syntax: `--name=value`, `--name value`, bare `--name` (boolean ON), `--skip-name`
//! and `--disable-name` (OFF), `--enable-name` (ON), `--loose-name...` (an unknown name is only a
//! warning). Dashes and underscores are interchangeable; names are normalised to underscores.
//!
//! Option-file syntax (`--defaults-file=PATH`, or `--defaults-extra-file=PATH` read after it):
//! `[group]` headers (only `[shoal]` and `[mysqld]` apply), `name = value` or bare `name`, values
//! optionally quoted, full-line `#`/`;` comments and trailing ` #` comments, `!include FILE` and
//! `!includedir DIR` (files ending in `.cnf`, sorted).
//!
//! Options handled here rather than by the server state: `--help`, `--version`,
//! `--defaults-file`, `--defaults-extra-file`, `--no-defaults`.

use std::path::{Path, PathBuf};

/// A parse failure; the binary prints it and exits with status 1.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionError {
    /// A malformed command-line argument.
    #[error("unrecognized argument '{0}'")]
    BadArgument(String),
    /// An option file could not be read.
    #[error("could not read option file '{path}': {reason}")]
    Unreadable {
        /// File path.
        path: String,
        /// OS error text.
        reason: String,
    },
    /// A syntax error in an option file.
    #[error("{path}:{line}: {reason}")]
    Syntax {
        /// File path.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// `!include` nesting too deep (a cycle).
    #[error("option file include depth exceeded at '{0}'")]
    IncludeDepth(String),
}

/// One option to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Normalised name (underscores).
    pub name: String,
    /// Value as text (`ON`/`OFF` for bare booleans).
    pub value: String,
    /// `--loose-` prefix: an unknown name is a warning, not an error.
    pub loose: bool,
    /// Where it came from, for error messages.
    pub origin: String,
}

/// What the command line asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// `--help`.
    pub help: bool,
    /// `--version`.
    pub version: bool,
    /// `--restore-from=DIR`: copy a `BACKUP TO` directory into the datadir and exit.
    pub restore_from: Option<String>,
    /// Options in application order (files first, then command line).
    pub options: Vec<Opt>,
}

/// Normalises an option name: trims, lowercases, dashes to underscores.
pub fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// Splits a `name` into (name, value) honouring `skip_`/`disable_`/`enable_`/`loose_`.
fn bool_prefixes(name: &str) -> (String, Option<&'static str>, bool) {
    let mut n = normalise(name);
    let mut loose = false;
    if let Some(rest) = n.strip_prefix("loose_") {
        n = rest.to_string();
        loose = true;
    }
    for (prefix, v) in [("skip_", "OFF"), ("disable_", "OFF"), ("enable_", "ON")] {
        if let Some(rest) = n.strip_prefix(prefix) {
            return (rest.to_string(), Some(v), loose);
        }
    }
    (n, None, loose)
}

/// Parses the command line (without the program name).
pub fn parse_args(args: &[String]) -> Result<Parsed, OptionError> {
    let mut parsed = Parsed::default();
    let mut cmdline = Vec::new();
    let mut defaults_file: Option<String> = None;
    let mut extra_file: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "-?" || a == "-h" {
            parsed.help = true;
            continue;
        }
        if a == "-V" {
            parsed.version = true;
            continue;
        }
        let Some(body) = a.strip_prefix("--") else {
            // Short forms mysqld accepts for the common ones: -P3307, -P 3307.
            if let Some(rest) = a.strip_prefix("-P") {
                let v = if rest.is_empty() {
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| OptionError::BadArgument(a.clone()))?;
                    i += 1;
                    v
                } else {
                    rest.to_string()
                };
                cmdline.push(Opt {
                    name: "port".into(),
                    value: v,
                    loose: false,
                    origin: "command line".into(),
                });
                continue;
            }
            return Err(OptionError::BadArgument(a.clone()));
        };
        if body.is_empty() {
            return Err(OptionError::BadArgument(a.clone()));
        }
        let (raw_name, inline_value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let (name, prefix_value, loose) = bool_prefixes(raw_name);
        match name.as_str() {
            "help" => {
                parsed.help = true;
                continue;
            }
            "version" => {
                parsed.version = true;
                continue;
            }
            "no_defaults" => continue,
            "verbose" => continue,
            _ => {}
        }
        let value = if let Some(v) = prefix_value {
            if inline_value.is_some() {
                return Err(OptionError::BadArgument(a.clone()));
            }
            v.to_string()
        } else if let Some(v) = inline_value {
            v
        } else if i < args.len() && !args[i].starts_with('-') {
            i += 1;
            args[i - 1].clone()
        } else {
            "ON".to_string()
        };
        match name.as_str() {
            "defaults_file" => defaults_file = Some(value),
            "defaults_extra_file" => extra_file = Some(value),
            "restore_from" => parsed.restore_from = Some(value),
            _ => cmdline.push(Opt {
                name,
                value,
                loose,
                origin: "command line".into(),
            }),
        }
    }
    for f in [defaults_file, extra_file].into_iter().flatten() {
        read_option_file(Path::new(&f), 0, &mut parsed.options)?;
    }
    parsed.options.extend(cmdline);
    Ok(parsed)
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')))
    {
        let inner = &v[1..v.len() - 1];
        return inner
            .replace("\\n", "\n")
            .replace("\\t", "\t")
            .replace("\\\\", "\\");
    }
    // Trailing comment: whitespace followed by '#'.
    let mut end = v.len();
    let bytes = v.as_bytes();
    for k in 1..bytes.len() {
        if bytes[k] == b'#' && bytes[k - 1].is_ascii_whitespace() {
            end = k;
            break;
        }
    }
    v[..end].trim().to_string()
}

/// Reads one option file (groups `[shoal]` and `[mysqld]`) into `out`.
pub fn read_option_file(path: &Path, depth: usize, out: &mut Vec<Opt>) -> Result<(), OptionError> {
    let shown = path.display().to_string();
    if depth > 10 {
        return Err(OptionError::IncludeDepth(shown));
    }
    let text = std::fs::read_to_string(path).map_err(|e| OptionError::Unreadable {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    let syntax = |line: usize, reason: &str| OptionError::Syntax {
        path: shown.clone(),
        line,
        reason: reason.to_string(),
    };
    let mut active = false;
    for (ln, raw) in text.lines().enumerate() {
        let ln = ln + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("!includedir") {
            let dir = PathBuf::from(rest.trim());
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map_err(|e| OptionError::Unreadable {
                    path: dir.display().to_string(),
                    reason: e.to_string(),
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
                .collect();
            files.sort();
            for f in files {
                read_option_file(&f, depth + 1, out)?;
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("!include") {
            let mut p = PathBuf::from(rest.trim());
            if p.is_relative() {
                if let Some(parent) = path.parent() {
                    p = parent.join(p);
                }
            }
            read_option_file(&p, depth + 1, out)?;
            continue;
        }
        if line.starts_with('!') {
            return Err(syntax(ln, "unknown directive"));
        }
        if let Some(group) = line.strip_prefix('[') {
            let Some(group) = group.strip_suffix(']') else {
                return Err(syntax(ln, "unterminated group header"));
            };
            let g = group.trim().to_ascii_lowercase();
            active = g == "shoal" || g == "mysqld";
            continue;
        }
        if !active {
            continue;
        }
        let (raw_name, value) = match line.split_once('=') {
            Some((n, v)) => (n.trim().to_string(), Some(unquote(v))),
            None => (unquote(line), None),
        };
        if raw_name.is_empty() {
            return Err(syntax(ln, "missing option name"));
        }
        let (name, prefix_value, loose) = bool_prefixes(&raw_name);
        let value = match (prefix_value, value) {
            (Some(_), Some(_)) => return Err(syntax(ln, "a skip-/enable- option takes no value")),
            (Some(v), None) => v.to_string(),
            (None, Some(v)) => v,
            (None, None) => "ON".to_string(),
        };
        out.push(Opt {
            name,
            value,
            loose,
            origin: format!("{shown}:{ln}"),
        });
    }
    Ok(())
}

/// Text of `--help`.
pub fn help_text() -> String {
    format!(
        "shoal {v} — a MySQL-compatible OLTP server with a thread pool\n\n\
Usage: shoal [OPTIONS]\n\n\
Options are mysqld's: --name=value, --name value, --skip-name, --enable-name;\n\
dashes and underscores are interchangeable. Any system variable that is settable at\n\
startup is an option. The most used ones:\n\
  --defaults-file=PATH     read options from PATH (groups [shoal] and [mysqld])\n\
  --port=N                 TCP port (default 3306)\n\
  --bind-address=ADDR      TCP address (default 127.0.0.1)\n\
  --socket=PATH            Unix socket (default /tmp/shoal.sock; empty = none)\n\
  --admin-port=N           administrative port served one thread per connection (0 = off)\n\
  --datadir=DIR            data directory (default ./shoal-data)\n\
  --max-connections=N      connection limit (+1 for root)\n\
  --thread-handling=MODE   one-thread-per-connection | pool-of-threads\n\
  --thread-cache-size=N    idle threads kept for reuse (one-thread-per-connection)\n\
  --wait-timeout=S, --interactive-timeout=S, --connect-timeout=S,\n\
  --net-read-timeout=S, --net-write-timeout=S, --max-allowed-packet=BYTES\n\
  --root-password=PW       password of root (default: empty)\n\
  --restore-from=DIR       copy the backup BACKUP TO 'DIR' made into --datadir (absent or\n\
                           empty) and exit; then start the server on that datadir\n\
  --help, --version\n",
        v = env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn pairs(p: &Parsed) -> Vec<(String, String)> {
        p.options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect()
    }

    #[test]
    fn command_line_forms() {
        let p = parse_args(&args(&[
            "--port=3307",
            "--bind_address",
            "0.0.0.0",
            "--skip-name-resolve",
            "--enable-foo",
            "--thread-handling=pool-of-threads",
            "--performance-schema",
            "--loose-unknown-thing=1",
            "-P",
            "4000",
        ]))
        .unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                ("port".into(), "3307".into()),
                ("bind_address".into(), "0.0.0.0".into()),
                ("name_resolve".into(), "OFF".into()),
                ("foo".into(), "ON".into()),
                ("thread_handling".into(), "pool-of-threads".into()),
                ("performance_schema".into(), "ON".into()),
                ("unknown_thing".into(), "1".into()),
                ("port".into(), "4000".into()),
            ]
        );
        assert!(p.options[6].loose);
        assert!(parse_args(&args(&["--help"])).unwrap().help);
        assert!(parse_args(&args(&["--version"])).unwrap().version);
        assert!(parse_args(&args(&["stray"])).is_err());
        assert!(parse_args(&args(&["--skip-x=1"])).is_err());
    }

    #[test]
    fn option_file_groups_comments_includes() {
        let dir = std::env::temp_dir().join(format!("shoal-opt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("inc.cnf"), "[mysqld]\nwait_timeout = 5\n").unwrap();
        let main = dir.join("my.cnf");
        std::fs::write(
            &main,
            "# comment\n; other comment\n[client]\nport=1\n[mysqld]\nport = 3310 # trailing\n\
             max-connections=20\nsocket = \"/tmp/x y.sock\"\nskip-log-bin\n[shoal]\nthread_cache_size=4\n\
             performance_schema\n!include inc.cnf\n[mysqldump]\nquick\n",
        )
        .unwrap();
        let p = parse_args(&args(&[
            &format!("--defaults-file={}", main.display()),
            "--port=3311",
        ]))
        .unwrap();
        assert_eq!(
            pairs(&p),
            vec![
                ("port".into(), "3310".into()),
                ("max_connections".into(), "20".into()),
                ("socket".into(), "/tmp/x y.sock".into()),
                ("log_bin".into(), "OFF".into()),
                ("thread_cache_size".into(), "4".into()),
                ("performance_schema".into(), "ON".into()),
                ("wait_timeout".into(), "5".into()),
                ("port".into(), "3311".into()),
            ]
        );
        std::fs::write(&main, "[mysqld]\n[broken\n").unwrap();
        let e = parse_args(&args(&[&format!("--defaults-file={}", main.display())])).unwrap_err();
        assert!(matches!(e, OptionError::Syntax { line: 2, .. }), "{e}");
        std::fs::write(&main, "[mysqld]\n!include my.cnf\n").unwrap();
        let e = parse_args(&args(&[&format!("--defaults-file={}", main.display())])).unwrap_err();
        assert!(matches!(e, OptionError::IncludeDepth(_)), "{e}");
        let e = parse_args(&args(&["--defaults-file=/nonexistent/my.cnf"])).unwrap_err();
        assert!(matches!(e, OptionError::Unreadable { .. }));
        std::fs::remove_dir_all(&dir).ok();
    }
}
