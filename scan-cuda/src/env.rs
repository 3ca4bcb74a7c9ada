//! The environment variables that override scan-cuda's choices for tuning
//! experiments: `SCAN_CUDA_POLICY`, `SCAN_CUDA_SELECTIVE_KERNEL` and
//! `SCAN_CUDA_SELECTIVE_BACKWARD_CARRIES`; they let a benchmark binary be
//! steered without a rebuild. Only the selective kernel has a
//! [`Tuning`](crate::Tuning) twin (`Tuning::selective_kernel`); the
//! Blelloch block shape (`SCAN_CUDA_POLICY`), the backward's carries
//! kernel and `SCAN_CUDA_COMPACT_SCATTER_BLOCKS` (a register bound on the
//! compaction's scatter, as blocks per SM, read when the executor first
//! builds its compaction module) are timing experiments only.
//!
//! An unset or empty variable is not set. A value that does not parse is
//! ignored and the default runs, as before; but the first time scan-cuda
//! reads it, it says so on stderr with the values the variable takes, once
//! per (variable, value). Otherwise a typo in a timing experiment
//! (`SCAN_CUDA_SELECTIVE_KERNEL=tile`) passes for a measurement of the form
//! asked for.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// A tuning variable: its name and the values it takes, in words for the
/// warning.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TuningVar {
    pub name: &'static str,
    pub takes: &'static str,
}

impl TuningVar {
    /// The variable's value as `parse` reads it: `None` when unset or empty,
    /// and when `parse` refuses it (warned once on stderr).
    pub fn read<T>(self, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
        let value = std::env::var_os(self.name)?;
        match self.interpret(value.to_str(), parse) {
            Ok(parsed) => parsed,
            Err(warning) => {
                if first_warning(self.name, &value.to_string_lossy()) {
                    eprintln!("{warning}");
                }
                None
            }
        }
    }

    /// `value` (None: not Unicode) as `parse` reads it, or the warning for a
    /// value it refuses. Empty is unset.
    fn interpret<T>(self, value: Option<&str>, parse: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, String> {
        match value {
            Some("") => Ok(None),
            Some(v) => match parse(v) {
                Some(parsed) => Ok(Some(parsed)),
                None => Err(self.warning(v)),
            },
            None => Err(self.warning("(not Unicode)")),
        }
    }

    fn warning(self, value: &str) -> String {
        format!("scan-cuda: ignoring {}={value:?}: it takes {}; the default runs", self.name, self.takes)
    }
}

/// True the first time (variable, value) comes here in this process.
fn first_warning(name: &'static str, value: &str) -> bool {
    static WARNED: Mutex<BTreeSet<(&'static str, String)>> = Mutex::new(BTreeSet::new());
    // A poisoned lock (a panic while inserting) still holds a usable set.
    let mut warned = WARNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    warned.insert((name, value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: TuningVar = TuningVar { name: "SCAN_CUDA_TEST_ONLY", takes: "`one` or `two`" };

    fn number(v: &str) -> Option<u32> {
        match v {
            "one" => Some(1),
            "two" => Some(2),
            _ => None,
        }
    }

    #[test]
    fn empty_is_unset_and_values_parse() {
        assert_eq!(VAR.interpret(Some(""), number), Ok(None));
        assert_eq!(VAR.interpret(Some("two"), number), Ok(Some(2)));
    }

    #[test]
    fn a_refused_value_is_named_with_what_the_variable_takes() {
        let warning = VAR.interpret(Some("three"), number).unwrap_err();
        assert_eq!(
            warning,
            "scan-cuda: ignoring SCAN_CUDA_TEST_ONLY=\"three\": it takes `one` or `two`; the default runs"
        );
        assert!(VAR.interpret(None, number).unwrap_err().contains("(not Unicode)"));
    }

    #[test]
    fn each_variable_and_value_warns_once() {
        assert!(first_warning("SCAN_CUDA_TEST_ONCE", "x"));
        assert!(!first_warning("SCAN_CUDA_TEST_ONCE", "x"));
        assert!(first_warning("SCAN_CUDA_TEST_ONCE", "y"));
        assert!(first_warning("SCAN_CUDA_TEST_ONCE_OTHER", "x"));
    }
}
