//! One accepted connection's clock: how long it may take to send a request
//! head, and how long it may sit idle between requests. A connection with a
//! request in flight (a long tool call, an open listen stream) has neither
//! deadline: it is as long as its request.

use futures_util::task::AtomicWaker;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Requests of one connection whose response has not ended yet, and the
/// waker of the connection's last read, woken when the last one ends (the
/// connection may be parked on a read that must now start the idle clock).
#[derive(Debug, Default)]
pub(super) struct InFlight {
    count: AtomicUsize,
    reader: AtomicWaker,
}

/// Held while a request is in flight (moved into its response body).
#[derive(Debug)]
pub(super) struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    /// Counts a request until the guard drops.
    pub(super) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self.clone())
    }

    fn busy(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.reader.wake();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading a request head: from the accept, or from the first byte after idling.
    Head,
    /// A request in flight.
    Busy,
    /// Between requests on a kept-alive connection.
    Idle,
}

/// The socket of one connection, with the head and idle deadlines applied
/// to its reads: once a deadline passes, reading fails and the connection closes.
#[derive(Debug)]
pub(super) struct Watched<S> {
    io: S,
    in_flight: Arc<InFlight>,
    phase: Phase,
    timer: Pin<Box<Sleep>>,
    head: Duration,
    idle: Duration,
}

impl<S> Watched<S> {
    /// `io` just accepted: its first head is due within `head`.
    pub(super) fn new(io: S, in_flight: Arc<InFlight>, head: Duration, idle: Duration) -> Self {
        let timer = Box::pin(tokio::time::sleep(head));
        Self { io, in_flight, phase: Phase::Head, timer, head, idle }
    }

    fn enter(&mut self, phase: Phase) {
        if self.phase == phase {
            return;
        }
        self.phase = phase;
        match phase {
            Phase::Head => self.timer.as_mut().reset(Instant::now() + self.head),
            Phase::Idle => self.timer.as_mut().reset(Instant::now() + self.idle),
            Phase::Busy => {}
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let me = &mut *self;
        match Pin::new(&mut me.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before && !me.in_flight.busy() && me.phase == Phase::Idle {
                    me.enter(Phase::Head);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                me.in_flight.reader.register(cx.waker());
                if me.in_flight.busy() {
                    me.enter(Phase::Busy);
                    return Poll::Pending;
                }
                if me.phase == Phase::Busy {
                    // The last response ended: the connection idles from now.
                    me.enter(Phase::Idle);
                }
                if me.timer.as_mut().poll(cx).is_ready() {
                    let what = if me.phase == Phase::Head { "request head" } else { "idle keep-alive" };
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} timeout"))));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
