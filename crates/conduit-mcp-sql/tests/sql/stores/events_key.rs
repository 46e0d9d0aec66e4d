//! The Events cursor key kept in the database (migration 0037): the same for
//! every `Stores` that opens one database (and schema), another for another,
//! none in memory.

use crate::support;

use conduit_mcp_sql::{Stores, StoresOptions};

#[tokio::test]
async fn sqlite_keeps_one_cursor_key_across_reopens_and_files_differ() {
    let (a, b) = (support::TempDb::new("events-key-a"), support::TempDb::new("events-key-b"));
    let first = Stores::open(&format!("sqlite:{}", a.path())).await.expect("open").events_cursor_key();
    let first = first.expect("an SQL store has a key");
    let again = Stores::open(&format!("sqlite:{}", a.path())).await.expect("reopen").events_cursor_key();
    assert_eq!(again, Some(first), "the same key after a restart");
    let other = Stores::open(&format!("sqlite:{}", b.path())).await.expect("open b").events_cursor_key();
    assert_ne!(other, Some(first), "another database, another key");
    assert_ne!(first, [0u8; 32]);
    assert_eq!(Stores::open("memory").await.expect("memory").events_cursor_key(), None);
}

#[tokio::test]
async fn postgres_nodes_share_the_cursor_key_of_their_schema() {
    let Some(url) = support::pg_url("postgres_nodes_share_the_cursor_key_of_their_schema") else { return };
    let schemas = support::Schemas::new(&url);
    let (s1, s2) = (schemas.fresh(), schemas.fresh());
    // Two nodes opening one fresh schema at once: one migrates, both read its key.
    let (a, b) = tokio::join!(
        StoresOptions::new(format!("postgres:{url}")).schema(&s1).open(),
        StoresOptions::new(format!("postgres:{url}")).schema(&s1).open(),
    );
    let (a, b) = (a.expect("node a"), b.expect("node b"));
    let key = a.events_cursor_key().expect("an SQL store has a key");
    assert_eq!(b.events_cursor_key(), Some(key));
    let other = StoresOptions::new(format!("postgres:{url}")).schema(&s2).open().await.expect("another schema");
    assert_ne!(other.events_cursor_key(), Some(key), "another schema, another key");
    for s in [&a, &b, &other] {
        s.stop();
    }
}
