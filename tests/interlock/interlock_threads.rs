//! Two real threads on one disk store: the O_EXCL lock file against a lost update.

use crate::common;

use ctxlab::interlock::schedule::Gates;
use ctxlab::interlock::threads::{race, races, EXPERIMENTS};

const NO_LOCK: Gates = Gates {
    min_hours: 24,
    min_sessions: 5,
    scan_throttle_min: 10,
    stale_lock_min: Some(60),
    use_lock: false,
};

#[test]
fn the_threads_row_meets_its_expectations() {
    for row in EXPERIMENTS {
        common::verdict_holding(row);
    }
}

/// Over many races: without the lock the first thread's merge is overwritten
/// every time; with it nothing is lost and exactly one thread wins the
/// O_EXCL create at the first try.
#[test]
fn every_race_loses_an_update_without_the_lock_and_none_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..25 {
        let without = race(&tmp.path().join(format!("off{i}")), &NO_LOCK).unwrap();
        assert_eq!(without.lost, vec!["b".to_string()], "race {i}");
        assert_eq!(without.first_try_winners, 0);
        let with = race(&tmp.path().join(format!("on{i}")), &Gates::default()).unwrap();
        assert!(with.lost.is_empty(), "race {i}: {with:?}");
        assert_eq!(with.first_try_winners, 1, "race {i}");
        assert_eq!(with.memories_left, 1, "race {i}");
        assert!(!tmp
            .path()
            .join(format!("on{i}/.memory/.consolidate.lock"))
            .exists());
    }
}

#[test]
fn the_counters_sum_over_the_races() {
    let c = races(&NO_LOCK, 3).unwrap();
    assert_eq!(c.count_of("facts_lost_by_consolidation"), Some(3));
    assert_eq!(c.count_of("lost_update_races"), Some(3));
}

/// A lock left by a crashed holder (and not yet stale) stops both threads
/// with an error naming the fix, instead of hanging either of them.
#[test]
fn a_leftover_lock_is_an_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    std::fs::create_dir_all(dir.join(".memory")).unwrap();
    std::fs::write(dir.join(".memory/.consolidate.lock"), "crashed 0").unwrap();
    let err = race(&dir, &Gates::default()).unwrap_err().to_string();
    assert!(err.contains(".consolidate.lock"), "{err}");
}
