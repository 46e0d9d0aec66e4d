//! `PostgresStore` on its own and shared: a database that goes away or
//! stalls, two nodes on one database (both eras, and a legacy request
//! forwarded between them), and the row cap on a sharded counter. Every test
//! needs `DATABASE_URL`.

mod changes_migration;
mod events_two_nodes;
mod faults;
mod legacy_forwarding;
mod legacy_two_nodes;
mod shards;
mod stalls;
mod two_nodes;
