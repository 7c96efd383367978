//! Every transcript format, in one table: `--format-in`'s help of `lab
//! replay` and `lab import`, the error for an unknown name, and GUIDE.md's
//! list (held to it by a test) are all made from [`ALL`].

use super::TranscriptFormat;

/// Every format `--format-in` names, in the order the docs list them.
pub const ALL: [TranscriptFormat; 18] = [
    TranscriptFormat::ClaudeJsonl,
    TranscriptFormat::ChatJson,
    TranscriptFormat::Anthropic,
    TranscriptFormat::OpenAi,
    TranscriptFormat::Trajectories,
    TranscriptFormat::MiniSweAgent,
    TranscriptFormat::Aider,
    TranscriptFormat::CodexRollout,
    TranscriptFormat::GeminiCli,
    TranscriptFormat::OpenCode,
    TranscriptFormat::OpenCodeStorage,
    TranscriptFormat::OpenHands,
    TranscriptFormat::OpenHandsEvents,
    TranscriptFormat::RooCode,
    TranscriptFormat::Goose,
    TranscriptFormat::Pi,
    TranscriptFormat::GeminiContents,
    TranscriptFormat::ClaudeTrace,
];

/// Every format's name joined by `sep`.
pub fn names(sep: &str) -> String {
    ALL.map(TranscriptFormat::name).join(sep)
}

/// The help of `--format-in`.
pub fn format_in_help() -> String {
    format!(
        "Read every file as this format instead of detecting it ({})",
        names(", ")
    )
}

/// The help of the inputs of `lab replay` and `lab import`.
pub fn inputs_help() -> String {
    format!(
        "Transcript files, or corpora of them: a directory (read recursively), a quoted glob, \
         or a tar archive (.tar, .tar.xz, .tar.gz) of sessions in any format, read one \
         session at a time, with --policy and --profile alike. Formats, sniffed from the \
         content: {}",
        names(", ")
    )
}

/// The position of `f` in [`ALL`]. The match names every variant, so a
/// new format does not compile until it is placed here, and the test below
/// then fails until it is in [`ALL`] at that place.
pub const fn position(f: TranscriptFormat) -> usize {
    use TranscriptFormat::*;
    match f {
        ClaudeJsonl => 0,
        ChatJson => 1,
        Anthropic => 2,
        OpenAi => 3,
        Trajectories => 4,
        MiniSweAgent => 5,
        Aider => 6,
        CodexRollout => 7,
        GeminiCli => 8,
        OpenCode => 9,
        OpenCodeStorage => 10,
        OpenHands => 11,
        OpenHandsEvents => 12,
        RooCode => 13,
        Goose => 14,
        Pi => 15,
        GeminiContents => 16,
        ClaudeTrace => 17,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_format_is_listed_once_at_its_position() {
        for (i, f) in super::ALL.into_iter().enumerate() {
            assert_eq!(super::position(f), i, "{}", f.name());
        }
    }

    #[test]
    fn every_name_reads_back_as_its_format() {
        for f in super::ALL {
            assert_eq!(super::TranscriptFormat::from_name(f.name()).unwrap(), f);
        }
    }
}
