//! `janitor = false` turns off the sweep, not crash recovery: a node
//! restarted after SIGKILL still recovers the tasks its predecessor ran
//! (before, with the janitor off, they stayed `working` until their TTL).

use crate::common;

use common::*;
use serde_json::json;
use std::time::Duration;

fn config_without_janitor() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("conduit-nojanitor-{:016x}.toml", rand::random::<u64>()));
    std::fs::write(&path, "[ext_tasks]\njanitor = false\n").expect("write the config");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_recovers_tasks_with_the_janitor_off() {
    let config = config_without_janitor();
    let db = std::env::temp_dir().join(format!("conduit-nojanitor-{:016x}.db", rand::random::<u64>()));
    let store = format!("sqlite:{}", db.display());
    let config_arg = config.display().to_string();
    let args = ["--config", &config_arg, "--store", &store, "--node-id", "solo", "--lease-ms", "2000"];
    let mut node = Node::start(&args).await;
    let sleeper = create(&node, None, "sleep", json!({ "seconds": 3600 })).await;
    let counter = create(&node, None, "countdown", json!({ "from": 1 })).await;
    node.kill();
    let node = Node::start(&args).await;
    let ids = vec![sleeper.clone(), counter.clone()];
    let mut stream = Events::listen(&node, None, &ids).await;
    stream.ack(Duration::from_secs(10)).await;
    let mut pending = ids.clone();
    for id in &ids {
        let g = get(&node, None, id).await;
        if matches!(g["status"].as_str(), Some("completed" | "failed")) {
            pending.retain(|p| p != id);
        }
    }
    while !pending.is_empty() {
        let (_, n) = stream.notification(Duration::from_secs(10)).await;
        if matches!(n["status"].as_str(), Some("completed" | "failed")) {
            pending.retain(|p| p != n["taskId"].as_str().unwrap_or_default());
        }
    }
    let s = get(&node, None, &sleeper).await;
    assert_eq!(s["error"]["message"], "interrupted: the server running this task stopped", "{s}");
    let c = get(&node, None, &counter).await;
    assert_eq!(c["status"], "completed", "resumable work ran again: {c}");
    drop(node);
    let _ = std::fs::remove_file(&config);
    let dir = db.parent().expect("dir");
    let stem = db.file_name().expect("name").to_string_lossy().into_owned();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        if e.file_name().to_string_lossy().starts_with(&stem) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
