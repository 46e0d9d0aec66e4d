//! Node ids are unique per live process: two nodes started with the default
//! id on one store do not take each other for a stopped node, and a
//! configured id that another live process holds is refused at start (and
//! admitted again once that process is gone).

use crate::common;

use common::*;
use serde_json::json;
use std::time::Duration;

fn temp_db() -> (String, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!("conduit-ids-{:016x}.db", rand::random::<u64>()));
    (format!("sqlite:{}", path.display()), path)
}

fn remove_db(path: &std::path::Path) {
    let dir = path.parent().expect("temp dir");
    let stem = path.file_name().expect("name").to_string_lossy().into_owned();
    for entry in std::fs::read_dir(dir).expect("temp dir").flatten() {
        if entry.file_name().to_string_lossy().starts_with(&stem) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_ids_do_not_recover_a_live_nodes_work() {
    let (store, path) = temp_db();
    let args = ["--store", &store, "--lease-ms", "3000"];
    let a = Node::start(&args).await;
    let id = create(&a, None, "sleep", json!({ "seconds": 3600 })).await;
    // A second process on the same file, default id: before ids were unique
    // by construction both were HOST:0, and B failed A's running task as
    // interrupted the moment it started.
    let b = Node::start(&args).await;
    let mut stream = Events::listen(&b, None, std::slice::from_ref(&id)).await;
    assert_eq!(stream.ack(Duration::from_secs(10)).await, std::slice::from_ref(&id));
    // Two recovery checks of B's (every tenth of the lease) and its start-up
    // recovery have run by now; none may touch A's task.
    assert_eq!(stream.within(Duration::from_millis(1_500)).await, None, "B changed A's live task");
    let g = get(&b, None, &id).await;
    assert_eq!(g["status"], "working", "{g}");
    drop((a, b));
    remove_db(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_refuses_an_id_a_live_process_holds() {
    let (store, path) = temp_db();
    let args = ["--store", &store, "--node-id", "twin"];
    let mut a = Node::start(&args).await;
    let (code, stderr) = Node::refused(&args).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--node-id \"twin\"") && stderr.contains("held by another live process"), "{stderr}");
    // A crashed holder frees the id at once: a restart under it is admitted.
    a.kill();
    let b = Node::start(&args).await;
    drop(b);
    remove_db(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refuses_an_id_a_live_node_holds() {
    let Some(url) = database_url() else { return };
    let schema = Schema::new(&url);
    let store = format!("postgres:{url}");
    let args = ["--store", &store, "--pg-schema", &schema.name, "--node-id", "twin"];
    let mut a = Node::start(&args).await;
    let (code, stderr) = Node::refused(&args).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--node-id \"twin\"") && stderr.contains("held by another live node"), "{stderr}");
    // The same id in another schema is another service: admitted.
    let other = Schema::new(&url);
    let elsewhere = Node::start(&["--store", &store, "--pg-schema", &other.name, "--node-id", "twin"]).await;
    a.kill();
    let b = Node::start(&args).await;
    drop((b, elsewhere));
    schema.drop_now().await;
    other.drop_now().await;
}

/// The node lock files next to the database at `path`.
fn lock_files(path: &std::path::Path) -> Vec<String> {
    let dir = path.parent().expect("temp dir");
    let prefix = format!("{}.node-", path.file_name().expect("name").to_string_lossy());
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .expect("temp dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix) && n.ends_with(".lock"))
        .collect();
    found.sort();
    found
}

/// Stops `node` with SIGTERM and waits for it to exit.
async fn terminate(node: &mut Node) {
    let pid = node.child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("run kill").success());
    node.until_log("the server to exit after SIGTERM", |_, ended| ended).await;
    assert_eq!(node.child.wait().expect("wait").code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_nodes_leave_no_lock_files_behind() {
    let (store, path) = temp_db();
    // Default ids differ on every start: each start used to leave its own file.
    let mut a = Node::start(&["--store", &store]).await;
    assert_eq!(lock_files(&path).len(), 1, "a live node holds one lock file");
    terminate(&mut a).await;
    assert_eq!(lock_files(&path), Vec::<String>::new(), "a stopped node's file is gone");
    // A node killed with -9 cannot clean up; the next node to start does.
    let mut b = Node::start(&["--store", &store]).await;
    b.kill();
    assert_eq!(lock_files(&path).len(), 1, "the killed node's leftover");
    let mut c = Node::start(&["--store", &store]).await;
    assert_eq!(lock_files(&path).len(), 1, "only the live node's own file");
    terminate(&mut c).await;
    assert_eq!(lock_files(&path), Vec::<String>::new());
    remove_db(&path);
}
