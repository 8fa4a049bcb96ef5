//! Evaluation budgets (§9.3).
//!
//! Steps measure work: one per expression node evaluated, one per element
//! a builtin visits, one per value visited by a deep comparison or hash,
//! and one per 64 bytes of text scanned. Created values measure memory:
//! one per list, map or string built plus one per element or field, and one
//! per 8 bytes of new text. Both are charged before (or while) the work is
//! done, so no single operation can run far past a budget: every loop over
//! data charges as it goes.
//!
//! A wall-clock limit backs the step budget up: should some operation cost
//! far more than the steps it charges (a cost model is only a model), the
//! query still ends, with a run error, within [`MAX_DURATION`].

use std::time::{Duration, Instant};

use super::error::{RunError, RunResult};

pub(crate) const MAX_STEPS: u64 = 10_000_000;
pub(crate) const MAX_VALUES: u64 = 10_000_000;
/// Far above what the step budget allows in a release build (well under a
/// second), and above it in a debug build too.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(10);
/// The clock is read once per this many steps.
const STEPS_PER_CLOCK_CHECK: u64 = 4096;

/// Bytes of text per step when scanning, and per created value when built.
const SCAN_BYTES_PER_STEP: usize = 64;
const TEXT_BYTES_PER_VALUE: usize = 8;

#[derive(Debug)]
pub(crate) struct Budget {
    steps: u64,
    values: u64,
    /// When `steps` reaches this, the clock is read.
    next_clock_check: u64,
    deadline: Instant,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            steps: 0,
            values: 0,
            next_clock_check: STEPS_PER_CLOCK_CHECK,
            deadline: Instant::now() + MAX_DURATION,
        }
    }
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
        if self.steps >= self.next_clock_check {
            self.next_clock_check = self.steps + STEPS_PER_CLOCK_CHECK;
            if Instant::now() > self.deadline {
                return Err(RunError::new(format!(
                    "query exceeded its time limit of {} s",
                    MAX_DURATION.as_secs()
                )));
            }
        }
        Ok(())
    }

    /// Charges `count` comparisons of keys of `bytes` bytes each (ordered
    /// maps, sorts and lookups compare whole keys).
    pub fn compare_keys(&mut self, bytes: usize, count: u64) -> RunResult<()> {
        let per_comparison = 1 + (bytes / SCAN_BYTES_PER_STEP) as u64;
        self.steps(per_comparison.saturating_mul(count))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_stops_a_query_that_outlives_its_time() {
        let mut budget = Budget {
            deadline: Instant::now(),
            ..Budget::default()
        };
        std::thread::sleep(Duration::from_millis(2));
        // Cheap steps pass until the clock is read.
        budget.steps(STEPS_PER_CLOCK_CHECK - 1).unwrap();
        let error = budget.step().unwrap_err();
        assert!(format!("{error:?}").contains("time limit"), "{error:?}");
    }

    #[test]
    fn long_keys_cost_a_step_per_64_bytes_per_comparison() {
        let mut budget = Budget::default();
        budget.compare_keys(64 * 10, 3).unwrap();
        assert_eq!(budget.steps, 33);
    }
}
