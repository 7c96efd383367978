//! Policy replays of a corpus, streamed: each session is imported, replayed
//! under every policy, written out (a JSON Lines record per policy, or with
//! `--per-session` its own tables or JSON object) and dropped before the
//! next is read, so
//! memory holds one session's runs plus the aggregates' per-session numbers
//! ([`crate::replay::observe::aggregate`]). By default only the aggregate table is printed.

use std::io::Write;

use super::policies::{checked_specs, dump_for, replay_session, Compared, Measure};
use super::shard::{CorpusJson, CorpusSpec, SessionRecords};
use crate::error::{LabError, LabResult};
use crate::import::corpus::{Input, Item};
use crate::import::{ImportOptions, ImportedSession, TranscriptFormat};
use crate::render::Format;
use crate::replay::observe::aggregate::{self, Aggregate, SessionRecord};
use crate::replay::observe::dump::DumpTarget;
use crate::shard::Shard;

/// `lab replay --format`: the lab's formats plus JSON Lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormat {
    /// A terminal table.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Pretty JSON: one object, `runs`, `retention`, `cost`, `recorded`, `aggregate`.
    Json,
    /// JSON Lines, streamed: one record per session × policy (`--policy` only).
    Jsonl,
}

/// The table format of a replay and whether it streams JSON Lines;
/// JSON Lines is for `--policy` replays only.
pub fn check_format(f: ReplayFormat, policy: bool) -> LabResult<(Format, bool)> {
    Ok(match f {
        ReplayFormat::Table => (Format::Table, false),
        ReplayFormat::Markdown => (Format::Markdown, false),
        ReplayFormat::Json => (Format::Json, false),
        ReplayFormat::Jsonl if policy => (Format::Json, true),
        ReplayFormat::Jsonl => {
            return Err(LabError::usage(
                "--format jsonl streams policy replays only",
                "replay with --policy NAME, or use --format json",
            ))
        }
    })
}

/// Whether the inputs hold many sessions: a directory, glob or archive, or
/// a trajectory array (one session per trajectory).
pub fn is_corpus(inputs: &[Input], import: &ImportOptions) -> LabResult<bool> {
    for input in inputs {
        if input.corpus {
            return Ok(true);
        }
        for item in &input.items {
            match item {
                Item::Archive(..) | Item::Parquet(_) => return Ok(true),
                Item::File(path) => {
                    let format = match import.format {
                        Some(f) => f,
                        None => crate::import::detect_format(path, &super::policies::head(path)?),
                    };
                    if format == TranscriptFormat::Trajectories {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// What a streamed replay prints.
#[derive(Debug, Clone, Copy)]
pub struct Streamed {
    /// Table format of the aggregate and per-session tables.
    pub format: Format,
    /// One JSON record per session × policy instead of tables.
    pub jsonl: bool,
    /// Each session's own tables, then the aggregate.
    pub per_session: bool,
    /// Worker threads (`--jobs`): sessions are replayed on this many, a
    /// bounded window of them at a time, and written in corpus order.
    pub jobs: usize,
    /// `--shard i/n`: replay only the sessions whose key hashes to shard `i`
    /// of `n`, opening no other file or member.
    pub shard: Option<Shard>,
}

/// Replay every session of `inputs` under every policy named, writing to
/// `out` as it goes; the aggregate (unless JSON Lines) at the end. Returns
/// the aggregate, for the distribution plot.
pub fn run(
    inputs: &[Input],
    names: &[String],
    path_len: usize,
    import: &ImportOptions,
    measure: &Measure,
    how: Streamed,
    out: &mut dyn Write,
) -> LabResult<Aggregate> {
    // Per-session JSON is written as it goes: `{"sessions": [` each
    // session's object as it is replayed `], "corpus": …}` (PerSessionJson).
    let per_session_json = how.per_session && how.format == Format::Json && !how.jsonl;
    if per_session_json && how.shard.is_some() {
        return Err(LabError::usage(
            "--per-session with --shard: a shard's part is the corpus JSON `--merge` reads, without per-session objects",
            "drop --per-session from the shards (merge them, then replay the sessions you need), or drop --shard",
        ));
    }
    let names = checked_specs(names)?;
    let mut agg = Aggregate::default();
    // The JSON object carries every replayed session's records (a few
    // hundred bytes per session and policy); tables need only the aggregate.
    let keep = how.format == Format::Json && !how.jsonl;
    let mut records = Vec::new();
    let mut failed = None;
    // Course policies build their roots on the backend of the starting thread.
    let backend = crate::storage::root::current_backend();
    let progress = crate::progress::Progress::spinner("replay: sessions");
    // The opening is written with the first session, so that a corpus of
    // no sessions (refused below) writes nothing.
    const OPENING: &str = "{\"sessions\": [\n";
    let mut written = 0usize;
    let read = crate::jobs::ordered(
        how.jobs,
        |push| read_sessions(inputs, import, measure, how.shard, push),
        |(place, s, dump)| {
            let one = crate::storage::root::with_backend(backend, || {
                replay_session(s, &names, path_len, measure, dump, 1)
            });
            (place, one)
        },
        |((key, order), one)| match one.and_then(|one| {
            let mine = emit(&one.runs, &mut agg, how, out)?;
            if per_session_json {
                let sep = if written == 0 { OPENING } else { ",\n" };
                write(out, sep)?;
                write(out, &session_json(&key, order, &one))?;
                written += 1;
            }
            Ok(mine)
        }) {
            Ok(mine) => {
                progress.step();
                if keep {
                    records.push(SessionRecords {
                        key,
                        order,
                        records: mine,
                    });
                }
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        },
    );
    // The first failing session stops the run before anything after it is written.
    if let Some(e) = failed {
        return Err(e);
    }
    let mut listed = read?;
    // No data is never a result: a corpus of no sessions is refused (a
    // shard of a corpus that has some may own none; its part still merges).
    if listed.sessions == 0
        && (how.shard.is_none() || listed.items == 0)
        && listed.damage.is_empty()
    {
        return Err(no_sessions(inputs, &listed));
    }
    if per_session_json && written == 0 {
        write(out, OPENING)?;
    }
    // A damaged archive or Parquet file fails the run after everything
    // else in the corpus was replayed and written.
    let damage = LabError::several(std::mem::take(&mut listed.damage));
    if how.jsonl {
        return damage.map_or(Ok(agg), Err);
    }
    let skipped = listed.skipped;
    let text = if keep {
        let corpus = CorpusJson {
            spec: corpus_spec(inputs, &names, path_len, import, measure),
            shard: how.shard,
            listing: listed.listing,
            items: listed.items,
            sessions: listed.sessions,
            skipped,
            records,
            checksum: None,
        };
        let whole = super::policies::render_corpus_json(&corpus.sealed());
        if per_session_json {
            format!("\n], \"corpus\": {}}}\n", whole.trim_end())
        } else {
            whole
        }
    } else {
        aggregate::table(&agg, how.format == Format::Markdown, skipped)
    };
    write(out, &text)?;
    damage.map_or(Ok(agg), Err)
}

/// The refusal of a corpus in which no session was found: what was listed
/// and how much of it was not a session.
fn no_sessions(inputs: &[Input], listed: &Listed) -> LabError {
    let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    let found = match (listed.items, listed.skipped) {
        (0, _) => "no file or member to read".to_string(),
        (n, s) if s == n => {
            format!("{n} files or members, none of them a session (each named above)")
        }
        (n, s) => format!("{n} files or members ({s} not sessions), none of this run's sessions"),
    };
    LabError::Input {
        file: std::path::PathBuf::from(names.join(" ")),
        line: 0,
        column: 0,
        message: format!("no sessions to replay: {found}"),
        fix: "name files, directories, globs or archives that hold sessions (a symbolic link to a \
              directory is not followed: name the directory itself), or name the format with \
              --format-in"
            .into(),
    }
}

/// What a corpus replay replays and how, for its JSON: parts of a sharded
/// replay merge only when theirs are equal.
fn corpus_spec(
    inputs: &[Input],
    policies: &[crate::policy::spec::PolicySpec],
    path_len: usize,
    import: &ImportOptions,
    measure: &Measure,
) -> CorpusSpec {
    let mut options = std::collections::BTreeMap::new();
    let mut set = |k: &str, v: String| options.insert(k.to_string(), v);
    set("path-len", path_len.to_string());
    set("retention", measure.retention.to_string());
    set("tokens", format!("{:?}", measure.tokens));
    set("envelope", format!("{:?}", measure.envelope));
    set("strict", import.strict.to_string());
    set("format-in", format!("{:?}", import.format));
    let cost = measure.pricing.as_ref().map_or("none".to_string(), |p| {
        format!("{:?} at {} ({})", p.provider, p.sheet.name, p.sheet.date)
    });
    set("cost", cost);
    CorpusSpec {
        inputs: inputs.iter().map(|i| i.name.clone()).collect(),
        policies: policies.iter().map(ToString::to_string).collect(),
        options,
    }
}

/// A session to replay: its key and place in corpus order, the session,
/// its dump target.
type Indexed = ((String, [usize; 3]), ImportedSession, Option<DumpTarget>);

/// What a read of the corpus saw.
struct Listed {
    /// SHA-256 of every key listed, one a line.
    listing: String,
    /// Files and members listed.
    items: usize,
    /// Sessions read (the shard's own).
    sessions: usize,
    /// Of the files and members read, those that are not sessions.
    skipped: usize,
    /// Archives and Parquet files that could not be read on (the rest of
    /// the corpus was read): the run fails with them after its output.
    damage: Vec<LabError>,
}

/// Every session of `inputs` that `shard` owns, in corpus order, with its
/// key, place and dump target, given to `push` until it returns false;
/// members that are not sessions are named on stderr and counted. Every
/// file and member is listed (its key hashed into the listing), and only
/// the shard's own are opened.
fn read_sessions(
    inputs: &[Input],
    import: &ImportOptions,
    measure: &Measure,
    shard: Option<Shard>,
    push: &mut dyn FnMut(Indexed) -> bool,
) -> LabResult<Listed> {
    use sha2::Digest;
    let mut listing = sha2::Sha256::new();
    let (mut items, mut sessions_read, mut skipped) = (0, 0, 0);
    let mut damage = Vec::new();
    let mut taken = Vec::new();
    let mut going = true;
    let all = inputs
        .iter()
        .flat_map(|i| i.items.iter().map(move |item| (i, item)));
    for (at, (input, item)) in all.enumerate() {
        if !going {
            break;
        }
        let keys = crate::import::corpus::Keys::of(input, item);
        let mut wanted = |key: &str| {
            listing.update(key.as_bytes());
            listing.update(b"\n");
            items += 1;
            shard.is_none_or(|s| s.owns_key(key))
        };
        let read = crate::import::corpus::for_each_member_where(
            item,
            &keys,
            import,
            false,
            &mut wanted,
            |member| {
                if !going {
                    return Ok(());
                }
                let sessions = match member.sessions {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!(
                            "skipped {}: {}",
                            member.name,
                            crate::import::corpus::not_a_session(&e)
                        );
                        skipped += 1;
                        return Ok(());
                    }
                };
                // A Claude Code log's subagents follow it, sessions of their own
                // (each reads its own requests from the log again).
                let sessions = sessions.into_iter().flat_map(|s| {
                    let subs = match measure.conversations.main_chain_only {
                        true => Vec::new(),
                        false => s.subagent_sessions(),
                    };
                    std::iter::once(s).chain(subs)
                });
                for (n, s) in sessions.enumerate() {
                    if s.subagent.is_none() {
                        super::policies::warn_damage(&s);
                    }
                    // The same per-session replay as named files get: the
                    // envelope, the product's artefacts removed, dumps (named
                    // by the sessions this shard replayed before).
                    let dump = dump_for(&s, measure, &mut taken);
                    sessions_read += 1;
                    let place = (member.key.clone(), [at, member.position, n]);
                    if !push((place, s, dump)) {
                        going = false;
                        break;
                    }
                }
                Ok(())
            },
        );
        match read {
            Ok(()) => {}
            Err(e @ (LabError::Usage { .. } | LabError::Io { .. })) => return Err(e),
            Err(e) => damage.push(e),
        }
    }
    let listing = listing
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Listed {
        listing,
        items,
        sessions: sessions_read,
        skipped,
        damage,
    })
}

/// One session's runs: counted, and written as records or tables; returns
/// its records.
fn emit(
    runs: &[Compared],
    agg: &mut Aggregate,
    how: Streamed,
    out: &mut dyn Write,
) -> LabResult<Vec<SessionRecord>> {
    let mut mine = Vec::with_capacity(runs.len());
    for c in runs {
        let record = SessionRecord::of(&c.run, c.cost.as_ref(), c.retention.as_ref(), c.anchor);
        if how.jsonl {
            let line = serde_json::to_string(&record).expect("records serialise");
            write(out, &format!("{line}\n"))?;
        }
        agg.add(&record);
        mine.push(record);
    }
    if how.per_session && !how.jsonl && how.format != Format::Json {
        write(out, &super::policies::render(runs, how.format))?;
        write(out, "\n")?;
    }
    Ok(mine)
}

/// One session of a `--per-session --format json` corpus replay: its key,
/// its place in corpus order and its runs as named session files print
/// them ([`PerSessionEntry`]), on one line.
fn session_json(key: &str, order: [usize; 3], one: &super::policies::SessionRuns) -> String {
    let info = super::policies::Sessions {
        envelopes: vec![one.envelope.clone()],
        compactions: one.compactions.clone(),
        counts: one.counts.iter().cloned().collect(),
        recorded: one.recorded.clone(),
        products: Vec::new(),
    };
    let replay = super::policies::render_sessions(&one.runs, &one.recorded, &info, Format::Json);
    let replay: serde_json::Value =
        serde_json::from_str(&replay).expect("the replay's JSON parses");
    serde_json::to_string(&serde_json::json!({"key": key, "order": order, "replay": replay}))
        .expect("the session's JSON serialises")
}

/// `lab replay CORPUS --policy … --per-session --format json`: each
/// session as named session files print it, then the corpus as `--format
/// json` prints it; one shape whatever the flags, described by the JSON
/// Schema [`per_session_schema`] generates (checked in as
/// `lab/schemas/replay-per-session.schema.json`). Written as it goes: a
/// session's object is out before the next session is read.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PerSessionJson<'a> {
    /// Every replayed session, in corpus order.
    pub sessions: Vec<PerSessionEntry<'a>>,
    /// The whole replay, as without `--per-session` (its `corpus` names
    /// every session's records; the per-run arrays are empty).
    pub corpus: super::policies::PoliciesJson<'a>,
}

/// One session of [`PerSessionJson`].
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct PerSessionEntry<'a> {
    /// The key of the file or archive member it came from.
    pub key: String,
    /// Its place in corpus order (input, member, session in the file).
    pub order: [usize; 3],
    /// Its runs, envelope, compactions and recorded rows, as `lab replay
    /// FILE --policy … --format json` prints them for the session alone.
    pub replay: super::policies::PoliciesJson<'a>,
}

/// The JSON Schema (draft 2020-12) of [`PerSessionJson`], as serialised.
pub fn per_session_schema() -> serde_json::Value {
    crate::render::schema_of::<PerSessionJson<'static>>()
}

fn write(out: &mut dyn Write, text: &str) -> LabResult<()> {
    out.write_all(text.as_bytes())
        .map_err(|e| LabError::io("writing the output", std::path::Path::new("<stdout>"), e))
}
