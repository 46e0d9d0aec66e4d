//! The SQLite ledger on real files: owner-only, shared by writers at once,
//! and refusing files that are not its own.

use super::*;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("conduit-ledger-{name}-{:016x}", rand::random::<u64>())).join("tasks.db")
}

fn entry(id: &str, at: i64) -> LedgerEntry {
    LedgerEntry::new("http://127.0.0.1:1/mcp", "anonymous", id, "2026-07-28", "build", "sha256:00", at)
}

#[tokio::test]
async fn entries_survive_reopening_and_the_file_is_owner_only() {
    let path = temp("reopen");
    let l = SqliteLedger::open(&path).await.unwrap();
    let mut e = entry("t-1", 10);
    e.expires_ms = Some(99);
    l.record(&e).await.unwrap();
    l.set_status(&e.server, "t-1", TaskStatus::InputRequired, 11).await.unwrap();
    drop(l);
    let l = SqliteLedger::open(&path).await.unwrap();
    let got = l.list(&LedgerFilter::all()).await.unwrap();
    e.status = TaskStatus::InputRequired;
    e.updated_ms = 11;
    assert_eq!(got, [e]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for suffix in ["", "-wal", "-shm"] {
            let f = format!("{}{suffix}", path.display());
            let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
        let dir = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir, 0o700);
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_at_once_lose_no_entry() {
    let path = temp("race");
    let (a, b) = (SqliteLedger::open(&path).await.unwrap(), SqliteLedger::open(&path).await.unwrap());
    let write = |l: SqliteLedger, who: &'static str| {
        tokio::spawn(async move {
            for i in 0..200 {
                l.record(&entry(&format!("{who}-{i}"), i)).await.unwrap();
                l.set_status("http://127.0.0.1:1/mcp", &format!("{who}-{i}"), TaskStatus::Completed, i).await.unwrap();
            }
        })
    };
    let (x, y) = (write(a.clone(), "a"), write(b, "b"));
    x.await.unwrap();
    y.await.unwrap();
    let all = a.list(&LedgerFilter::all()).await.unwrap();
    assert_eq!(all.len(), 400);
    assert!(all.iter().all(|e| e.status == TaskStatus::Completed));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn the_cap_keeps_every_unfinished_task() {
    let path = temp("cap");
    let l = SqliteLedger::open(&path).await.unwrap().cap(2);
    l.record(&entry("a", 1)).await.unwrap();
    l.record(&entry("b", 2)).await.unwrap();
    assert!(matches!(l.record(&entry("c", 3)).await, Err(LedgerError::Full { cap: 2 })));
    l.mark_lost("http://127.0.0.1:1/mcp", "a", "expired", 4).await.unwrap();
    l.record(&entry("c", 5)).await.unwrap();
    let ids: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
    assert_eq!(ids, ["b", "c"]);
    let mut b = entry("b", 6);
    b.expires_ms = Some(7);
    l.record(&b).await.unwrap();
    l.record(&entry("d", 8)).await.unwrap();
    let ids: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
    assert_eq!(ids, ["c", "d"], "an unfinished task past its TTL made room");
    assert_eq!(l.prune(10_000, Duration::from_secs(1)).await.unwrap(), 0);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_call_whose_answer_never_came_goes_after_the_retention() {
    let path = temp("stale-call");
    let l = SqliteLedger::open(&path).await.unwrap();
    let old = LedgerEntry::call_in_flight("http://127.0.0.1:1/mcp", "anonymous", "2026-07-28", "t", "d", 1_000);
    let recent = LedgerEntry::call_in_flight("http://127.0.0.1:1/mcp", "anonymous", "2026-07-28", "t", "d", 9_500);
    l.record(&old).await.unwrap();
    l.record(&recent).await.unwrap();
    l.record(&entry("unfinished", 1)).await.unwrap();
    assert_eq!(l.prune(10_000, Duration::from_secs(1)).await.unwrap(), 1);
    let mut left: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
    left.sort();
    let mut want = vec![recent.task_id.clone(), "unfinished".to_owned()];
    want.sort();
    assert_eq!(left, want);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn files_that_are_not_a_ledger_are_refused_and_left_alone() {
    // Not SQLite at all; a truncated ledger; another program's database.
    let garbage = temp("garbage");
    std::fs::create_dir_all(garbage.parent().unwrap()).unwrap();
    std::fs::write(&garbage, b"{\"tasks\": [] }").unwrap();
    let err = SqliteLedger::open(&garbage).await.unwrap_err();
    assert!(matches!(err, LedgerError::Unreadable { .. }), "{err}");
    assert_eq!(std::fs::read(&garbage).unwrap(), b"{\"tasks\": [] }");

    let truncated = temp("truncated");
    let l = SqliteLedger::open(&truncated).await.unwrap();
    for i in 0..50 {
        l.record(&entry(&format!("t-{i}"), i)).await.unwrap();
    }
    drop(l);
    let bytes = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len().min(100)]).unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", truncated.display()));
    }
    let err = match SqliteLedger::open(&truncated).await {
        Ok(l) => l.list(&LedgerFilter::all()).await.unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(err, LedgerError::Unreadable { .. }), "{err}");

    let foreign = temp("foreign");
    {
        std::fs::create_dir_all(foreign.parent().unwrap()).unwrap();
        let other = Connection::open(&foreign).unwrap();
        other.execute_batch("CREATE TABLE notes (body TEXT)").unwrap();
    }
    let err = SqliteLedger::open(&foreign).await.unwrap_err();
    assert!(err.to_string().contains("another program's SQLite database"), "{err}");

    let aside = SqliteLedger::move_aside(&garbage, 7).unwrap();
    assert!(aside.to_string_lossy().ends_with(".unreadable-7"));
    assert!(SqliteLedger::open(&garbage).await.is_ok(), "a new ledger starts where the old one was");
    for p in [garbage, truncated, foreign] {
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}

#[tokio::test]
async fn the_count_behind_the_cap_is_read_at_opening_and_by_each_fold_with_other_writers_entries() {
    let path = temp("count");
    let first = SqliteLedger::open(&path).await.unwrap();
    for i in 0..3 {
        first.record(&entry(&format!("first-{i}"), i)).await.unwrap();
    }
    drop(first);
    // Folded by reads only, so that nothing counts behind the test's back.
    let a = SqliteLedger::open_unfolded(&path).await.unwrap();
    assert_eq!(a.count.entries(), 3, "counted at opening, before any record");
    let b = SqliteLedger::open(&path).await.unwrap();
    for i in 0..5 {
        b.record(&entry(&format!("b-{i}"), i)).await.unwrap();
    }
    assert_eq!(b.list(&LedgerFilter::all()).await.unwrap().len(), 8, "b folded");
    a.record(&entry("a-0", 9)).await.unwrap();
    assert_eq!(a.count.entries(), 3, "a record only queues: nothing is counted on its path");
    assert_eq!(a.list(&LedgerFilter::all()).await.unwrap().len(), 9);
    assert_eq!(a.count.entries(), 9, "a's fold counted b's entries too");
    drop((a, b));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
