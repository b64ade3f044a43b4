//! Synchronisation shim: `std` normally, `loom` under `cfg(loom)`, so the model tests in
//! `crate::model` check the group state machine with every interleaving loom can explore.

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use ::loom::sync::{Arc, Condvar, Mutex};
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use ::loom::thread;

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::{Arc, Condvar, Mutex};
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::thread;
