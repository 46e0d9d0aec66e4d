//! JSON-RPC 2.0: error objects ([`error`]), messages and their encoder
//! ([`message`]), and the parser for both directions ([`parse`]).

pub mod error;
pub mod message;
pub mod parse;

pub use error::{ErrorClass, ErrorCode, FORBIDDEN, RESOURCE_NOT_FOUND, RpcError, URL_ELICITATION_REQUIRED};
pub use message::{Message, Request, RequestId};
pub use parse::{Incoming, ParseFailure, Response, classify, parse_incoming};
