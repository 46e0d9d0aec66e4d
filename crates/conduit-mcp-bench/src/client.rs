//! A minimal HTTP/1.1 keep-alive client: one request in flight per connection,
//! `Content-Length` and chunked bodies, and an incremental SSE reader for
//! listen streams. Cheap on purpose: it shares the machine with the server.

use std::io;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One keep-alive connection.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// Received bytes not yet consumed: `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The decoded body of the last response.
    body: Vec<u8>,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    status: u16,
    /// Length of the head including the blank line.
    len: usize,
    content_length: Option<usize>,
    chunked: bool,
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

fn parse_head(b: &[u8]) -> io::Result<Option<Head>> {
    let Some(end) = crate::wire::find(b, b"\r\n\r\n") else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&b[..end]).map_err(|_| bad("non-UTF-8 response head"))?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status =
        status_line.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| bad("bad status line"))?;
    let mut content_length = None;
    let mut chunked = false;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim();
        if k.eq_ignore_ascii_case("content-length") {
            content_length = Some(v.parse().map_err(|_| bad("bad content-length"))?);
        } else if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    Ok(Some(Head { status, len: end + 4, content_length, chunked }))
}

impl Conn {
    /// Connects with `TCP_NODELAY`.
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, buf: vec![0; 16 * 1024], start: 0, end: 0, body: Vec::with_capacity(4096) })
    }

    /// Reads more bytes into the buffer; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n > 0)
    }

    async fn read_head(&mut self) -> io::Result<Head> {
        loop {
            if let Some(h) = parse_head(&self.buf[self.start..self.end])? {
                self.start += h.len;
                return Ok(h);
            }
            if !self.fill().await? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before a response"));
            }
        }
    }

    /// Reads exactly `n` body bytes into `self.body`.
    async fn read_exact_body(&mut self, mut n: usize) -> io::Result<()> {
        while n > 0 {
            if self.start == self.end && !self.fill().await? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a body"));
            }
            let take = n.min(self.end - self.start);
            self.body.extend_from_slice(&self.buf[self.start..self.start + take]);
            self.start += take;
            n -= take;
        }
        Ok(())
    }

    /// Reads one line (without CRLF) from the buffer.
    async fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(p) = crate::wire::find(&self.buf[self.start..self.end], b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[self.start..self.start + p]).into_owned();
                self.start += p + 2;
                return Ok(line);
            }
            if !self.fill().await? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a chunk"));
            }
        }
    }

    /// Reads the next chunk of a chunked body into `self.body` (appending); `Ok(false)` at the last chunk.
    async fn read_chunk(&mut self) -> io::Result<bool> {
        let line = self.read_line().await?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            // Trailers, then the blank line.
            while !self.read_line().await?.is_empty() {}
            return Ok(false);
        }
        self.read_exact_body(size).await?;
        let crlf = self.read_line().await?;
        if !crlf.is_empty() {
            return Err(bad("missing CRLF after a chunk"));
        }
        Ok(true)
    }

    /// Sends `request` (a whole HTTP request) and reads the whole response.
    /// Returns the status; the body is [`Conn::body`].
    pub async fn roundtrip(&mut self, request: &[u8]) -> io::Result<u16> {
        self.stream.write_all(request).await?;
        let head = self.read_head().await?;
        self.read_body(head).await?;
        Ok(head.status)
    }

    /// Like [`Conn::roundtrip`], and also returns the value of the response header `name`
    /// (case-insensitive), e.g. the `Mcp-Session-Id` an `initialize` answers with.
    pub async fn roundtrip_header(&mut self, request: &[u8], name: &str) -> io::Result<(u16, Option<String>)> {
        self.stream.write_all(request).await?;
        let head = self.read_head().await?;
        // The head is still in the buffer, just before `start`.
        let text = String::from_utf8_lossy(&self.buf[self.start - head.len..self.start]);
        let value = text.split("\r\n").find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        });
        self.read_body(head).await?;
        Ok((head.status, value))
    }

    async fn read_body(&mut self, head: Head) -> io::Result<()> {
        self.body.clear();
        if head.chunked {
            while self.read_chunk().await? {}
        } else {
            self.read_exact_body(head.content_length.unwrap_or(0)).await?;
        }
        Ok(())
    }

    /// The body of the last response.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Sends `request` and reads only the head of a streamed (chunked) response,
    /// turning the connection into an [`SseStream`].
    pub async fn open_stream(mut self, request: &[u8]) -> io::Result<SseStream> {
        self.stream.write_all(request).await?;
        let head = self.read_head().await?;
        if head.status != 200 || !head.chunked {
            self.body.clear();
            if let Some(n) = head.content_length {
                self.read_exact_body(n).await?;
            }
            return Err(bad(&format!(
                "expected a 200 event stream, got {}: {}",
                head.status,
                String::from_utf8_lossy(&self.body)
            )));
        }
        self.body.clear();
        Ok(SseStream { conn: self, pending: Vec::new(), done: false })
    }
}

/// A server-sent event stream on one connection.
#[derive(Debug)]
pub struct SseStream {
    conn: Conn,
    /// Decoded stream text not yet split into events.
    pending: Vec<u8>,
    done: bool,
}

impl SseStream {
    /// The next event's `data` (lines joined with `\n`), or `None` when the stream ended.
    pub async fn next_data(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(p) = crate::wire::find(&self.pending, b"\n\n") {
                let event: Vec<u8> = self.pending.drain(..p + 2).collect();
                let text = String::from_utf8_lossy(&event);
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.is_empty() {
                    continue; // a comment (keep-alive) or a retry field
                }
                return Ok(Some(data.join("\n")));
            }
            if self.done {
                return Ok(None);
            }
            self.conn.body.clear();
            if !self.conn.read_chunk().await? {
                self.done = true;
            }
            let chunk = std::mem::take(&mut self.conn.body);
            // Normalise CRLF line ends so events always split at "\n\n".
            self.pending.extend(chunk.iter().copied().filter(|&b| b != b'\r'));
            self.conn.body = chunk;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_heads() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nabc").expect("ok").expect("complete");
        assert_eq!(h, Head { status: 200, len: 39, content_length: Some(12), chunked: false });
        let h =
            parse_head(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n").expect("ok").expect("complete");
        assert!(h.chunked && h.status == 404);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\n").expect("ok").is_none());
    }

    #[tokio::test]
    async fn reads_length_chunked_and_sse_bodies() {
        use tokio::io::AsyncWriteExt as _;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await.expect("read");
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello").await.expect("write");
            let _ = s.read(&mut buf).await.expect("read");
            s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .await
                .expect("write");
            let _ = s.read(&mut buf).await.expect("read");
            s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: one\r\n5\r\n\n\ndat\r\n")
                .await
                .expect("write");
            s.write_all(b"8\r\na: two\n\n\r\n0\r\n\r\n").await.expect("write");
        });
        let mut c = Conn::connect(addr).await.expect("connect");
        assert_eq!(c.roundtrip(b"GET / HTTP/1.1\r\n\r\n").await.expect("rt"), 200);
        assert_eq!(c.body(), b"hello");
        assert_eq!(c.roundtrip(b"GET / HTTP/1.1\r\n\r\n").await.expect("rt"), 200);
        assert_eq!(c.body(), b"abcde");
        let mut s = c.open_stream(b"GET / HTTP/1.1\r\n\r\n").await.expect("stream");
        assert_eq!(s.next_data().await.expect("event").as_deref(), Some("one"));
        assert_eq!(s.next_data().await.expect("event").as_deref(), Some("two"));
        assert_eq!(s.next_data().await.expect("end"), None);
        server.await.expect("server");
    }
}
