//! Progress bars on long phases, only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// Phases shorter than this many operations get no bar.
const MIN_OPS_FOR_BAR: u64 = 50_000;

/// A progress bar, or nothing (stderr not a terminal, JSON output, short phase).
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `ops` operations of workload `name` if stderr is a terminal and the phase is
    /// long enough; hidden otherwise.
    pub fn for_phase(name: &str, ops: u64) -> Progress {
        if ops < MIN_OPS_FOR_BAR || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::new(ops);
        if let Ok(style) =
            ProgressStyle::with_template("{prefix:<12} [{bar:40}] {pos}/{len} {rate} eta {eta}")
        {
            let style = style.with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} ops/s", state.per_sec());
                },
            );
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress { bar }
    }

    /// A bar that draws nothing.
    pub fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
        }
    }

    /// Advances by `n` operations.
    pub fn inc(&self, n: u64) {
        if n > 0 {
            self.bar.inc(n);
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
