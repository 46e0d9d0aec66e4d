//! The bodies around a request: the request body must arrive within a
//! deadline (a half-sent body cannot hold a connection or a shutdown), and
//! the response body carries the connection's in-flight guard until it ends.

use super::conn::InFlightGuard;
use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Why a request body stopped: it did not arrive within the body-read timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub(super) struct BodyTimeout(pub(super) Duration);

/// A request body due by a deadline.
pub(super) struct Deadline<B> {
    inner: B,
    due: Instant,
    limit: Duration,
    /// Made at the first wait (most bodies arrive with the head).
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> Deadline<B> {
    /// `inner`, due within `limit` from now.
    pub(super) fn new(inner: B, limit: Duration) -> Self {
        Self { inner, due: Instant::now() + limit, limit, timer: None }
    }
}

impl<B> http_body::Body for Deadline<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let me = &mut *self;
        match Pin::new(&mut me.inner).poll_frame(cx) {
            Poll::Ready(f) => Poll::Ready(f.map(|r| r.map_err(Into::into))),
            Poll::Pending => {
                let due = me.due;
                let timer = me.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout(me.limit))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request counted as in flight until it ends or drops.
pub(super) struct Guarded {
    inner: Body,
    _guard: InFlightGuard,
}

impl Guarded {
    pub(super) fn new(inner: Body, guard: InFlightGuard) -> Self {
        Self { inner, _guard: guard }
    }
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a body-read error is a [`BodyTimeout`] (somewhere in its sources).
pub(super) fn is_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<BodyTimeout>() {
            return true;
        }
        cur = err.source();
    }
    false
}
