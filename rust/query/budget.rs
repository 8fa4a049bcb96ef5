//! Evaluation budgets (BEHAVIOUR §9.3).
//!
//! Steps measure work: one per expression node evaluated, one per element
//! a builtin visits, one per value visited by a deep comparison or hash,
//! and one per 64 bytes of text scanned. Created values measure memory:
//! one per list, map or string built plus one per element or field, and one
//! per 8 bytes of new text. Both are charged before (or while) the work is
//! done, so no single operation can run far past a budget: every loop over
//! data charges as it goes.

use super::error::{RunError, RunResult};

pub(crate) const MAX_STEPS: u64 = 10_000_000;
pub(crate) const MAX_VALUES: u64 = 10_000_000;

/// Bytes of text per step when scanning, and per created value when built.
const SCAN_BYTES_PER_STEP: usize = 64;
const TEXT_BYTES_PER_VALUE: usize = 8;

#[derive(Debug, Default)]
pub(crate) struct Budget {
    steps: u64,
    values: u64,
}

impl Budget {
    /// Charges `n` steps.
    #[inline]
    pub fn steps(&mut self, n: u64) -> RunResult<()> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > MAX_STEPS {
            return Err(RunError::new(format!(
                "query exceeded the budget of {MAX_STEPS} evaluation steps"
            )));
        }
        Ok(())
    }

    /// Charges one step.
    #[inline]
    pub fn step(&mut self) -> RunResult<()> {
        self.steps(1)
    }

    /// Charges the work of scanning `bytes` of text.
    #[inline]
    pub fn scan(&mut self, bytes: usize) -> RunResult<()> {
        self.steps((bytes / SCAN_BYTES_PER_STEP) as u64)
    }

    /// Charges `n` created values.
    #[inline]
    pub fn values(&mut self, n: u64) -> RunResult<()> {
        self.values = self.values.saturating_add(n);
        if self.values > MAX_VALUES {
            return Err(RunError::new(format!(
                "query exceeded the budget of {MAX_VALUES} created values"
            )));
        }
        Ok(())
    }

    /// Charges a container of `len` elements.
    pub fn container(&mut self, len: usize) -> RunResult<()> {
        self.values(1 + len as u64)
    }

    /// Charges a new string of `bytes` bytes (building it scans them too).
    pub fn text(&mut self, bytes: usize) -> RunResult<()> {
        self.scan(bytes)?;
        self.values(1 + (bytes / TEXT_BYTES_PER_VALUE) as u64)
    }
}
