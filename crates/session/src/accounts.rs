//! The account store: every account with its password hash, limits, lock and privileges, in
//! memory for logins and checks and durably in the datadir.
//!
//! # Durability
//!
//! Each account is one system record of the store (`shoal_store::system`, kind `b'U'`, named
//! `user NUL host`, host lower-cased), a JSON `Record`. A change ([`Accounts::modify`]) works
//! on a copy of the list under the write lock, computes which records changed, writes them as
//! one synced RocksDB batch and only then publishes the new list: a statement that returns OK
//! has its change on disk (surviving `kill -9` and power loss, as DDL does), a failed write
//! changes nothing, and a multi-account statement (RENAME USER, DROP USER a, b) is all or
//! nothing on disk too. Without a table engine (unit tests of the session layer) the list lives
//! in memory only.
//!
//! # First start
//!
//! A datadir without account records gets `root@localhost` with every privilege and GRANT
//! OPTION, using `default_authentication_plugin`, and, like `mysqld --initialize`, a random
//! password written to the error log ("A temporary password is generated for root@localhost:
//! ..."). `--root-password=PW` chooses the password instead, `--initialize-insecure` gives root
//! no password (the development default `./run-server` and the tests use). A `--root-password`
//! given on a later start sets root@localhost's password again (and stores it), so the option
//! keeps its meaning. The server logs a loud warning at every start while root@localhost has no
//! password. (Unlike MySQL the generated password is not marked expired: shoal has no password
//! expiry.)
//!
//! # Versions
//!
//! Every published change bumps [`Accounts::version`]; sessions cache their account's grants
//! with the version they came from and reload when it moved (one atomic load per statement).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use shoal_sql::SqlError;
use shoal_store::{Engine, SystemWrite};

use shoal_proto::AuthPlugin;

use crate::privileges::Grants;
use crate::sha2_password::Sha2Cache;
use crate::users::{self, Account, Auth};

/// System-record kind of accounts.
const KIND: u8 = b'U';

/// An account as stored. New fields must be `#[serde(default)]` so older datadirs load.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    user: String,
    host: String,
    /// The plugin's stored string (`*` + 40 hex digits, `$A$005$...`), or empty for no
    /// password.
    #[serde(default)]
    password: String,
    /// The authentication plugin; empty (records written before plugins) is
    /// `mysql_native_password`.
    #[serde(default)]
    plugin: String,
    #[serde(default)]
    max_user_connections: u64,
    #[serde(default)]
    locked: bool,
    #[serde(default)]
    grants: Grants,
    #[serde(default)]
    require_ssl: bool,
}

impl Record {
    fn of(a: &Account) -> Record {
        Record {
            user: a.user.clone(),
            host: a.host.clone(),
            password: a.auth.auth_string(),
            plugin: a.auth.plugin().name().to_string(),
            max_user_connections: a.max_user_connections,
            locked: a.locked,
            grants: a.grants.clone(),
            require_ssl: a.require_ssl,
        }
    }

    fn account(self) -> Result<Account, String> {
        let plugin = if self.plugin.is_empty() {
            AuthPlugin::NativePassword
        } else {
            AuthPlugin::from_name(&self.plugin).ok_or_else(|| {
                format!(
                    "account '{}'@'{}': unknown plugin '{}'",
                    self.user, self.host, self.plugin
                )
            })?
        };
        let auth = Auth::from_stored(plugin, &self.password)
            .ok_or_else(|| format!("account '{}'@'{}': bad password hash", self.user, self.host))?;
        Ok(Account {
            user: self.user,
            host: self.host,
            auth,
            max_user_connections: self.max_user_connections,
            locked: self.locked,
            grants: self.grants,
            require_ssl: self.require_ssl,
        })
    }
}

/// `*` + 40 hex digits to the 20-byte hash.
pub fn parse_hash(s: &str) -> Option<[u8; 20]> {
    let h = s
        .strip_prefix('*')
        .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    let v = (0..20)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    v.try_into().ok()
}

fn record_name(a: &Account) -> Vec<u8> {
    let mut k = a.user.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(a.host.to_ascii_lowercase().as_bytes());
    k
}

/// How a fresh datadir's root@localhost is made (startup options, see the module doc).
#[derive(Debug, Default)]
struct FirstStart {
    /// `--root-password`: used on a fresh datadir, and set again on every later start.
    root_password: Option<String>,
    /// `--initialize-insecure`: a fresh datadir's root gets no password.
    insecure: bool,
    /// `default_authentication_plugin`: root's plugin on a fresh datadir.
    plugin: AuthPlugin,
}

/// The server's accounts (see the module doc).
pub struct Accounts {
    list: RwLock<Vec<Account>>,
    version: AtomicU64,
    /// Where changes are written; `None` until the table engine is attached.
    store: RwLock<Option<Engine>>,
    /// What a fresh datadir's root gets.
    first_start: Mutex<FirstStart>,
    /// `caching_sha2_password`'s fast-path cache.
    sha2_cache: Sha2Cache,
}

impl Default for Accounts {
    fn default() -> Self {
        Accounts::new()
    }
}

/// Characters of a generated root password: letters, digits and punctuation that needs no
/// quoting in a shell or an option file.
const PASSWORD_CHARS: &[u8] =
    b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789.,:;_-+=#%@";

/// A random password for a fresh datadir's root (20 characters, about 120 bits).
pub fn generate_password() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..20)
        .map(|_| PASSWORD_CHARS[rng.gen_range(0..PASSWORD_CHARS.len())] as char)
        .collect()
}

impl Accounts {
    /// Only the bootstrap root (no password), in memory.
    pub fn new() -> Accounts {
        let mut root = Account::new("root", "localhost", Auth::Native(None));
        root.grants = Grants::all();
        Accounts {
            list: RwLock::new(vec![root]),
            version: AtomicU64::new(1),
            store: RwLock::new(None),
            first_start: Mutex::new(FirstStart::default()),
            sha2_cache: Sha2Cache::default(),
        }
    }

    /// Bumped by every change.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// `caching_sha2_password`'s cache of successful full authentications.
    pub fn sha2_cache(&self) -> &Sha2Cache {
        &self.sha2_cache
    }

    fn first_start(&self) -> std::sync::MutexGuard<'_, FirstStart> {
        self.first_start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `--root-password`: root@localhost's password now, and again once the store is attached.
    pub fn set_root_password(&self, password: &str) {
        self.first_start().root_password = Some(password.to_string());
        let mut l = self.list.write().unwrap_or_else(PoisonError::into_inner);
        for a in l.iter_mut().filter(|a| a.is("root", "localhost")) {
            a.auth = Auth::new(a.auth.plugin(), password);
        }
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// `--initialize-insecure`: a fresh datadir's root@localhost gets no password.
    pub fn set_initialize_insecure(&self, on: bool) {
        self.first_start().insecure = on;
    }

    /// `default_authentication_plugin` at startup: the plugin of a fresh datadir's root.
    pub fn set_default_plugin(&self, plugin: AuthPlugin) {
        self.first_start().plugin = plugin;
    }

    /// Loads the accounts of `store` (bootstrapping a fresh datadir, see the module doc) and
    /// writes every later change there.
    pub fn attach(&self, store: Engine) -> Result<(), String> {
        let records = store
            .system_records(KIND)
            .map_err(|e| format!("reading accounts: {e}"))?;
        let mut loaded = Vec::with_capacity(records.len());
        for (_, v) in records {
            let r: Record =
                serde_json::from_slice(&v).map_err(|e| format!("account record: {e}"))?;
            loaded.push(r.account()?);
        }
        let fresh = loaded.is_empty();
        *self.store.write().unwrap_or_else(PoisonError::into_inner) = Some(store);
        let (root_password, insecure, plugin) = {
            let f = self.first_start();
            (f.root_password.clone(), f.insecure, f.plugin)
        };
        if fresh {
            let (password, generated) = match (&root_password, insecure) {
                (Some(pw), _) => (pw.clone(), false),
                (None, true) => (String::new(), false),
                (None, false) => (generate_password(), true),
            };
            let mut current = self
                .list
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for a in current.iter_mut().filter(|a| a.is("root", "localhost")) {
                a.auth = Auth::new(plugin, &password);
            }
            self.persist(&[], &current)
                .map_err(|e| format!("writing the first accounts: {e}"))?;
            *self.list.write().unwrap_or_else(PoisonError::into_inner) = current;
            tracing::info!(
                "new datadir: created account root@localhost ({}) with every privilege",
                plugin.name()
            );
            if generated {
                // mysqld --initialize's words, so that scripts written for it find the line.
                tracing::warn!("A temporary password is generated for root@localhost: {password}");
            }
        } else {
            *self.list.write().unwrap_or_else(PoisonError::into_inner) = loaded;
            if let Some(pw) = root_password {
                self.modify(|l| {
                    for a in l.iter_mut().filter(|a| a.is("root", "localhost")) {
                        a.auth = Auth::new(a.auth.plugin(), &pw);
                    }
                    Ok(())
                })
                .map_err(|e| format!("setting root's password: {e}"))?;
            }
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        let list = self.list.read().unwrap_or_else(PoisonError::into_inner);
        if list
            .iter()
            .any(|a| a.is("root", "localhost") && !a.auth.has_password())
        {
            let why = if fresh && insecure {
                "--initialize-insecure: "
            } else {
                ""
            };
            tracing::warn!(
                "*** {why}account root@localhost has NO PASSWORD: anyone on this machine can log \
                 in as root. Development use only. Set one with ALTER USER root@localhost \
                 IDENTIFIED BY '...' or --root-password ***"
            );
        }
        Ok(())
    }

    /// The account for `user` connecting from `host`: the most specific host pattern first
    /// (patterns without wildcards before those with).
    pub fn find(&self, user: &str, host: &str) -> Option<Account> {
        let l = self.list.read().unwrap_or_else(PoisonError::into_inner);
        let mut matching: Vec<&Account> = l
            .iter()
            .filter(|a| a.user == user && users::host_matches(&a.host, host))
            .collect();
        matching.sort_by_key(|a| a.host.contains(['%', '_']));
        matching.first().map(|a| (*a).clone())
    }

    /// The account `'user'@'host'` exactly (host case-insensitive).
    pub fn get(&self, user: &str, host: &str) -> Option<Account> {
        self.list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|a| a.is(user, host))
            .cloned()
    }

    /// A copy of every account, in creation order.
    pub fn all(&self) -> Vec<Account> {
        self.list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Applies `f` to a copy of the list; if it succeeds, stores what changed (one synced
    /// batch) and publishes the copy. Changes are serialized by the write lock.
    pub fn modify<T>(
        &self,
        f: impl FnOnce(&mut Vec<Account>) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        let mut l = self.list.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = l.clone();
        let out = f(&mut next)?;
        self.persist(&l, &next).map_err(|e| {
            SqlError::coded(
                shoal_errors::ER_UNKNOWN_ERROR,
                format!("cannot store accounts: {e}"),
            )
        })?;
        *l = next;
        self.version.fetch_add(1, Ordering::AcqRel);
        // Cached fast-path entries only of accounts that still exist with the same hash.
        self.sha2_cache.retain(|u, h, stored| {
            l.iter()
                .any(|a| a.is(u, h) && a.auth.auth_string() == stored)
        });
        Ok(out)
    }

    /// Writes the difference between `old` and `new` to the store (if attached).
    fn persist(&self, old: &[Account], new: &[Account]) -> Result<(), shoal_store::StoreError> {
        let store = self.store.read().unwrap_or_else(PoisonError::into_inner);
        let Some(store) = store.as_ref() else {
            return Ok(());
        };
        let mut writes = Vec::new();
        for a in old {
            if !new.iter().any(|n| n.is(&a.user, &a.host)) {
                writes.push(SystemWrite::Delete(KIND, record_name(a)));
            }
        }
        for a in new {
            if old.iter().any(|o| o == a) {
                continue;
            }
            let json = serde_json::to_vec(&Record::of(a)).expect("records serialize");
            writes.push(SystemWrite::Put(KIND, record_name(a), json));
        }
        if writes.is_empty() {
            return Ok(());
        }
        store.write_system(&writes)
    }
}
