//! The lab's one error type. Every variant names what was wrong, where, and the fix.

mod io_fix;
use std::fmt;
use std::path::PathBuf;

/// Errors the lab reports to a user. `Display` is the message printed by the CLI.
#[derive(Debug)]
pub enum LabError {
    /// The command line asked for something that does not exist (unknown experiment, profile...).
    Usage {
        /// What was wrong.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A user-supplied file (scenario, transcript) is malformed.
    Input {
        /// The file.
        file: PathBuf,
        /// 1-based line, 0 when unknown.
        line: usize,
        /// 1-based column, 0 when unknown.
        column: usize,
        /// What was found and what was expected.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// A refused operation on guarded state (hostile memory name, path outside a store).
    Refused {
        /// What was refused and why.
        message: String,
        /// How to fix it.
        fix: String,
    },
    /// The file system failed underneath the lab.
    Io {
        /// What the lab was doing.
        context: String,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The data was written and kept, but a file derived from it (a memory
    /// store's index) could not be rewritten (a full disk): exit 5, so a
    /// caller can tell "nothing lost, rebuild later" from a failed write.
    Kept {
        /// What was kept and what failed after it.
        context: String,
        /// The derived file that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A run did not meet its stated expectations (scenario, selftest).
    Expectation {
        /// One line per broken expectation.
        failures: Vec<String>,
    },
    /// Generated files differ from their checked-in copies (`lab reports --check`).
    Drift {
        /// One line per differing file.
        files: Vec<String>,
    },
    /// Several files failed in one command; the good ones were reported.
    Several(Vec<LabError>),
}

impl LabError {
    /// Shorthand for a usage error.
    pub fn usage(message: impl Into<String>, fix: impl Into<String>) -> Self {
        LabError::Usage {
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// Shorthand for an I/O error with context.
    pub fn io(
        context: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        LabError::Io {
            context: context.into(),
            path: path.into(),
            source,
        }
    }

    /// The message and the fix without the `error:`/`fix:` framing, for an
    /// error that is reported inside another one (a bad `set` entry in a
    /// file); kinds without a fix give an empty one.
    pub fn parts(&self) -> (String, String) {
        match self {
            LabError::Usage { message, fix }
            | LabError::Input { message, fix, .. }
            | LabError::Refused { message, fix } => (message.clone(), fix.clone()),
            other => {
                let text = other.to_string();
                (
                    text.trim_start_matches("error: ").trim_end().to_string(),
                    String::new(),
                )
            }
        }
    }

    /// The output's reader went away (`lab … | head`): not an error of the
    /// lab's; the command stops quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, LabError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The process exit code documented in README.md ("Exit codes").
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::Expectation { .. } | LabError::Drift { .. } => 1,
            LabError::Usage { .. } => 2,
            LabError::Input { .. } | LabError::Refused { .. } => 3,
            LabError::Io { .. } => 4,
            LabError::Kept { .. } => 5,
            // The gravest of them, so one bad file among good ones still fails the command.
            LabError::Several(errors) => errors.iter().map(LabError::exit_code).max().unwrap_or(1),
        }
    }

    /// One error as is; several as [`LabError::Several`]; `None` for none.
    pub fn several(mut errors: Vec<LabError>) -> Option<LabError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(LabError::Several(errors)),
        }
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::Usage { message, fix } => write!(f, "error: {message}\n  fix: {fix}"),
            LabError::Input {
                file,
                line,
                column,
                message,
                fix,
            } => {
                // A position is shown only when known: never `:0`.
                let at = match (line, column) {
                    (0, _) => String::new(),
                    (l, 0) => format!(":{l}"),
                    (l, c) => format!(":{l}:{c}"),
                };
                write!(f, "error: {}{at}: {message}\n  fix: {fix}", file.display())
            }
            LabError::Refused { message, fix } => {
                write!(f, "error: refused: {message}\n  fix: {fix}")
            }
            LabError::Io {
                context,
                path,
                source,
            } => write!(
                f,
                "error: {context}: {}: {source}\n  fix: {}",
                path.display(),
                io_fix::fix(source.kind())
            ),
            LabError::Kept {
                context,
                path,
                source,
            } => write!(
                f,
                "error: {context}: {}: {source}\n  kept: nothing was lost; free space and the next open rebuilds it",
                path.display()
            ),
            LabError::Several(errors) => {
                let n = errors.len();
                for (k, e) in errors.iter().enumerate() {
                    let text = e.to_string();
                    write!(f, "{}", text.trim_end())?;
                    if k + 1 < n {
                        writeln!(f)?;
                    }
                }
                Ok(())
            }
            LabError::Expectation { failures } => {
                let n = failures.len();
                let s = if n == 1 { "" } else { "s" };
                writeln!(f, "error: {n} expectation{s} failed")?;
                for line in failures {
                    writeln!(f, "  - {line}")?;
                }
                Ok(())
            }
            LabError::Drift { files } => {
                let n = files.len();
                let (s, verb) = if n == 1 {
                    ("", "differs")
                } else {
                    ("s", "differ")
                };
                writeln!(
                    f,
                    "error: {n} generated file{s} {verb} from the checked-in copy"
                )?;
                for line in files {
                    writeln!(f, "  - {line}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LabError {}

/// Result alias used throughout the lab.
pub type LabResult<T> = Result<T, LabError>;

#[cfg(test)]
mod tests {
    use super::*;

    fn input(line: usize, column: usize) -> String {
        LabError::Input {
            file: "s.json".into(),
            line,
            column,
            message: "bad".into(),
            fix: "fix it".into(),
        }
        .to_string()
    }

    #[test]
    fn unknown_positions_are_left_out() {
        assert_eq!(input(2, 3), "error: s.json:2:3: bad\n  fix: fix it");
        assert_eq!(input(2, 0), "error: s.json:2: bad\n  fix: fix it");
        assert_eq!(input(0, 0), "error: s.json: bad\n  fix: fix it");
    }

    #[test]
    fn counts_are_labelled_and_singular_when_one() {
        let one = LabError::Expectation {
            failures: vec!["x".into()],
        }
        .to_string();
        assert!(one.starts_with("error: 1 expectation failed\n"), "{one}");
        let drift = LabError::Drift {
            files: vec!["a.md".into(), "b.md".into()],
        };
        assert_eq!(drift.exit_code(), 1);
        assert!(drift
            .to_string()
            .starts_with("error: 2 generated files differ from the checked-in copy\n"));
    }
}
