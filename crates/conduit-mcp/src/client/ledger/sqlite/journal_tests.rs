//! The journal on real files: what a process leaves when it dies before
//! folding is folded by the next open (a torn last line skipped, nothing
//! regressed, nothing folded twice), writers in several processes lose
//! nothing, and the journal is owner-only and holds only the entries.

use super::*;

const SERVER: &str = "http://127.0.0.1:1/mcp";

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("conduit-journal-{name}-{:016x}", rand::random::<u64>())).join("tasks.db")
}

fn entry(id: &str, at: i64) -> LedgerEntry {
    LedgerEntry::new(SERVER, "anonymous", id, "2026-07-28", "build", "sha256:00", at)
}

/// The entries in the file itself, without opening a ledger (so nothing is folded).
fn in_file(path: &Path) -> Vec<String> {
    let c = Connection::open(path).unwrap();
    let mut q = c.prepare("SELECT task_id FROM tasks ORDER BY task_id").unwrap();
    q.query_map([], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap()
}

async fn ids(l: &SqliteLedger) -> Vec<String> {
    let mut ids: Vec<String> = l.list(&LedgerFilter::all()).await.unwrap().into_iter().map(|e| e.task_id).collect();
    ids.sort();
    ids
}

fn journals(db: &Path) -> Vec<PathBuf> {
    journal::journals_of(db).unwrap()
}

#[tokio::test]
async fn a_journal_left_by_a_dead_process_is_folded_by_the_next_open() {
    let path = temp("orphan");
    let l = SqliteLedger::open_unfolded(&path).await.unwrap();
    let mut e = entry("t-1", 1);
    e.expires_ms = Some(99);
    e.lost = Some("a reason".into());
    for i in 0..4 {
        l.record(&entry(&format!("t-{i}"), i)).await.unwrap();
    }
    l.record(&e).await.unwrap();
    let call = LedgerEntry::call_in_flight(SERVER, "anonymous", "2026-07-28", "build", "sha256:01", 5);
    l.record(&call).await.unwrap();
    l.replace(&call.task_id, &entry("t-4", 6)).await.unwrap();
    let journal = l.journal_path();
    l.abandon();

    // The file was counted at opening: every record waits in the journal.
    assert!(in_file(&path).is_empty());
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(text.lines().count(), 7, "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // Each line holds an entry's columns (and its place), nothing else.
    let columns: Vec<&str> = COLUMNS.split(", ").collect();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in v.as_object().unwrap().keys() {
            assert!(columns.contains(&key.as_str()) || key == "seq" || key == "call", "{key} in {line}");
        }
    }

    let next = SqliteLedger::open(&path).await.unwrap();
    assert!(!journal.exists(), "the orphan is removed once folded");
    assert_eq!(journals(&path), [next.journal_path()]);
    let got = next.list(&LedgerFilter::all()).await.unwrap();
    let ids: Vec<&str> = got.iter().map(|e| e.task_id.as_str()).collect();
    assert_eq!(ids, ["t-0", "t-1", "t-2", "t-3", "t-4"], "the call in flight became its task");
    assert_eq!(got[1], e);
    drop(next);
    assert!(journals(&path).is_empty(), "a dropped ledger removes its journal");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_torn_last_line_is_skipped() {
    let path = temp("torn");
    let l = SqliteLedger::open_unfolded(&path).await.unwrap();
    for id in ["a", "b", "c"] {
        l.record(&entry(id, 1)).await.unwrap();
    }
    let journal = l.journal_path();
    l.abandon();
    let text = std::fs::read_to_string(&journal).unwrap();
    let last = text.lines().last().unwrap().replace("\"c\"", "\"torn\"");
    let mut f = std::fs::OpenOptions::new().append(true).open(&journal).unwrap();
    std::io::Write::write_all(&mut f, &last.as_bytes()[..last.len() / 2]).unwrap();
    drop(f);

    let next = SqliteLedger::open(&path).await.unwrap();
    assert_eq!(ids(&next).await, ["a", "b", "c"]);
    assert!(!journal.exists());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn an_older_line_never_regresses_a_newer_status() {
    let path = temp("regress");
    let a = SqliteLedger::open_unfolded(&path).await.unwrap();
    let c = SqliteLedger::open(&path).await.unwrap();
    a.record(&entry("first", 0)).await.unwrap();
    // Waiting in a's journal: k and lost at 1, n at 10.
    a.record(&entry("k", 1)).await.unwrap();
    a.record(&entry("lost", 1)).await.unwrap();
    a.record(&entry("n", 10)).await.unwrap();
    // Meanwhile, in the file: k completed at 5, lost marked lost at 2, n seen at 3.
    let mut k = entry("k", 1);
    k.status = TaskStatus::Completed;
    k.updated_ms = 5;
    c.record(&k).await.unwrap();
    c.record(&entry("lost", 1)).await.unwrap();
    c.mark_lost(SERVER, "lost", "expired", 2).await.unwrap();
    c.record(&entry("n", 3)).await.unwrap();
    c.list(&LedgerFilter::all()).await.unwrap();
    a.abandon();

    let next = SqliteLedger::open(&path).await.unwrap();
    let got = next.list(&LedgerFilter::all()).await.unwrap();
    let by = |id: &str| got.iter().find(|e| e.task_id == id).unwrap().clone();
    assert_eq!(by("k").status, TaskStatus::Completed, "a terminal status stays");
    assert_eq!(by("lost").lost.as_deref(), Some("expired"), "lost stays lost");
    assert_eq!(by("n").updated_ms, 10, "a newer line applies");
    assert_eq!(got.len(), 4);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn lines_already_folded_are_not_folded_again() {
    let path = temp("watermark");
    let l = SqliteLedger::open_unfolded(&path).await.unwrap();
    l.record(&entry("first", 0)).await.unwrap();
    l.record(&entry("gone", 1)).await.unwrap();
    let journal = l.journal_path();
    let written = std::fs::read(&journal).unwrap();
    // Folded (the list folds first), then forgotten; the folded line is put
    // back in the file, as a fold that could not empty it leaves it.
    assert_eq!(ids(&l).await, ["first", "gone"]);
    assert_eq!(l.forget("gone").await.unwrap(), 1);
    std::fs::write(&journal, &written).unwrap();
    l.abandon();

    let next = SqliteLedger::open(&path).await.unwrap();
    assert_eq!(ids(&next).await, ["first"], "a forgotten entry does not come back");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_opens_at_once_fold_each_orphan_once_and_lose_nothing() {
    let path = temp("opens");
    let mut writers = Vec::new();
    for who in ["a", "b", "c"] {
        let l = SqliteLedger::open_unfolded(&path).await.unwrap();
        for i in 0..50 {
            l.record(&entry(&format!("{who}-{i}"), i)).await.unwrap();
        }
        writers.push(l);
    }
    writers.into_iter().for_each(SqliteLedger::abandon);
    assert_eq!(journals(&path).len(), 3);
    let (x, y) = tokio::join!(SqliteLedger::open(&path), SqliteLedger::open(&path));
    let (x, y) = (x.unwrap(), y.unwrap());
    let mine = [x.journal_path(), y.journal_path()];
    assert!(journals(&path).iter().all(|j| mine.contains(j)), "every orphan is folded and removed");
    assert_eq!(x.list(&LedgerFilter::all()).await.unwrap().len(), 150);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// Run by [`processes_writing_at_once_lose_nothing`] in a child process:
/// records 200 entries and dies without unwinding (no drop, no last fold).
#[tokio::test]
#[ignore = "a child process of processes_writing_at_once_lose_nothing"]
async fn child_records_then_aborts() {
    let (Some(path), Some(who)) = (std::env::var_os("CONDUIT_JOURNAL_DB"), std::env::var("CONDUIT_JOURNAL_WHO").ok())
    else {
        return;
    };
    let l = SqliteLedger::open(&path).await.unwrap();
    for i in 0..200 {
        l.record(&entry(&format!("{who}-{i}"), i)).await.unwrap();
    }
    std::process::abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_writing_at_once_lose_nothing() {
    let path = temp("processes");
    let here = SqliteLedger::open(&path).await.unwrap();
    let child = |who: &str| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "client::ledger::sqlite::journal_tests::child_records_then_aborts"])
            .args(["--ignored", "--test-threads", "1", "-q"])
            .env("CONDUIT_JOURNAL_DB", &path)
            .env("CONDUIT_JOURNAL_WHO", who)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut x, mut y) = (child("x"), child("y"));
    for i in 0..200 {
        here.record(&entry(&format!("here-{i}"), i)).await.unwrap();
    }
    let (x, y) = tokio::task::spawn_blocking(move || (x.wait().unwrap(), y.wait().unwrap())).await.unwrap();
    assert!(!x.success() && !y.success(), "each child died without folding: {x} {y}");
    drop(here);
    let next = SqliteLedger::open(&path).await.unwrap();
    let got = ids(&next).await;
    assert_eq!(got.len(), 600);
    for who in ["x", "y", "here"] {
        assert_eq!(got.iter().filter(|id| id.starts_with(&format!("{who}-"))).count(), 200, "{who}");
    }
    drop(next);
    assert!(journals(&path).is_empty());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_journal_written_over_after_a_fold_replays_only_its_new_lines() {
    let path = temp("rewound");
    let l = SqliteLedger::open_unfolded(&path).await.unwrap();
    // Both wait in the journal, t-long's line first.
    let mut long = entry("t-long", 2);
    long.tool = "a-tool-with-a-long-name-so-that-its-line-outlasts-the-next".into();
    l.record(&long).await.unwrap();
    l.record(&entry("t-gone", 3)).await.unwrap();
    // A read folds them; then t-gone is forgotten, and one more record goes
    // at the start of the journal, over t-long's line.
    assert_eq!(ids(&l).await, ["t-gone", "t-long"]);
    assert_eq!(l.forget("t-gone").await.unwrap(), 1);
    l.record(&entry("t-new", 4)).await.unwrap();
    let journal = l.journal_path();
    l.abandon();

    let text = std::fs::read(&journal).unwrap();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "the new line, the cut rest of t-long's, t-gone's whole");
    assert!(String::from_utf8_lossy(lines[0]).contains("t-new"));
    assert!(String::from_utf8_lossy(lines[2]).contains("t-gone"), "a whole line folded before");

    // The next open folds t-new only: t-gone's old line is under the
    // watermark, and the cut one does not parse.
    let next = SqliteLedger::open(&path).await.unwrap();
    assert_eq!(ids(&next).await, ["t-long", "t-new"]);
    drop(next);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
