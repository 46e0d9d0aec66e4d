//! A tool whose arguments are a Rust type: `serde` parses them, `schemars`
//! writes the `inputSchema` clients see, and a bad call is refused before
//! `run` is reached.
//!
//! ```text
//! cargo run -p conduit-mcp --example typed_tool          # 127.0.0.1:8080, or give HOST:PORT
//! ```

use async_trait::async_trait;
use conduit_mcp::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

/// The doc comments become the schema's descriptions.
#[derive(Deserialize, JsonSchema)]
struct Convert {
    /// The amount to convert.
    amount: f64,
    /// The unit it is in.
    from: Unit,
    /// The unit wanted.
    to: Unit,
}

/// An enum becomes `"enum": [...]` in the schema (inline, for clients that do
/// not follow `$ref`): no string matching in `run`.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[schemars(inline)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
    Kelvin,
}

impl Unit {
    /// `v` of this unit, in kelvin.
    fn kelvin(self, v: f64) -> f64 {
        match self {
            Unit::Celsius => v + 273.15,
            Unit::Fahrenheit => (v - 32.0) * 5.0 / 9.0 + 273.15,
            Unit::Kelvin => v,
        }
    }

    /// `k` kelvin, in this unit.
    fn of_kelvin(self, k: f64) -> f64 {
        match self {
            Unit::Celsius => k - 273.15,
            Unit::Fahrenheit => (k - 273.15) * 9.0 / 5.0 + 32.0,
            Unit::Kelvin => k,
        }
    }
}

#[async_trait]
impl TypedTool for Convert {
    const NAME: &'static str = "convert";
    const DESCRIPTION: &'static str = "Converts a temperature between units";

    async fn run(self, _ctx: Ctx) -> Result<ToolOutput, RpcError> {
        let value = self.to.of_kelvin(self.from.kelvin(self.amount));
        Ok(CallToolResult::text(format!("{value:.2}")).into())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("typed-tool", "1.0.0").typed_tool::<Convert>().build().expect("a valid server");
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let bound = http::bind(addr.parse().expect("HOST:PORT")).await?;
    println!("listening on http://{}/mcp", bound.local_addr());
    bound.serve(server, HttpConfig::default(), async { tokio::signal::ctrl_c().await.unwrap_or_default() }).await
}
