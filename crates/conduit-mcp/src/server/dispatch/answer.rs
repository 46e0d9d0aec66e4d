//! The pipeline's answer to one request before it leaves: the message, and
//! whether its result still lacks the era's stamps (`server::stamp`), which
//! are then either inserted ([`Answer::into_message`]) or written as the
//! answer is encoded ([`Answer::to_json_bytes`], which copies nothing).

use crate::protocol::jsonrpc::Message;
use crate::server::Server;
use crate::server::stamp::stamp;
#[cfg(feature = "http")]
use crate::server::stamp::{Stamped, StampedResponse};

/// A response (or, from a transport's queue, any message) on its way out.
#[derive(Debug)]
pub(crate) struct Answer {
    message: Message,
    /// Whether a `Message::Result`'s result still needs its stamps.
    unstamped: bool,
}

impl Answer {
    /// A message that needs nothing more.
    pub(crate) fn plain(message: Message) -> Self {
        Self { message, unstamped: false }
    }

    /// A result of a modern request, not stamped yet.
    pub(super) fn unstamped(message: Message) -> Self {
        Self { message, unstamped: true }
    }

    #[cfg(feature = "http")]
    /// Whether it ends a request (a response).
    pub(crate) fn is_response(&self) -> bool {
        self.message.is_response()
    }

    /// The message, stamped.
    pub(crate) fn into_message(self, server: &Server) -> Message {
        match self.message {
            Message::Result { id, result } if self.unstamped => {
                Message::Result { id, result: stamp(result, server.server_info_stamp()) }
            }
            m => m,
        }
    }

    #[cfg(feature = "http")]
    /// Whether it is an error response.
    pub(crate) fn is_error(&self) -> bool {
        matches!(self.message, Message::Error { .. })
    }

    #[cfg(feature = "http")]
    /// The message's JSON text as bytes, stamped as it is written.
    pub(crate) fn to_json_bytes(&self, server: &Server) -> Vec<u8> {
        match &self.message {
            Message::Result { id, result } if self.unstamped => {
                let response = StampedResponse { id, result: Stamped { result, info: server.server_info_stamp() } };
                // Most answers fit: one allocation instead of a few doublings.
                let mut out = Vec::with_capacity(512);
                match serde_json::to_writer(&mut out, &response) {
                    Ok(()) => out,
                    Err(_) => Vec::new(),
                }
            }
            m => m.to_json_bytes(),
        }
    }
}
