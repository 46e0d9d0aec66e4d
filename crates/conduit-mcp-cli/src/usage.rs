//! What the server prints once it listens: the endpoint, and a request to try.

use std::net::SocketAddr;

/// Prints the "try it" request for the bound address, with the bearer
/// header when the server requires one.
pub(crate) fn print(scheme: &str, addr: SocketAddr, store: &str, token: Option<&str>) {
    let auth = match token {
        Some(_) => " -H 'Authorization: Bearer TOKEN' \\\n    ".to_owned(),
        None => String::new(),
    };
    eprintln!(
        "conduit-mcp reference server (protocol 2026-07-28, task store: {store})\n\
         try it{}:\n  curl -s {scheme}://{addr}/mcp \\\n    {auth}-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    \
         -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo' \\\n    \
         -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hi\"}},\
         \"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{{}}}}}}}}'",
        if token.is_some() { " (TOKEN: one of your --token values)" } else { "" },
    );
}
