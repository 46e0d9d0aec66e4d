//! A small incremental reader of `text/event-stream` bodies: it gathers the
//! `data:` lines of each event and hands out the event's data, and keeps the
//! last `id:` and `retry:` (legacy streams resume with them); comments and
//! `event:` are ignored. A line or an event's data longer than its limit
//! ends the stream with an error: a server cannot make the client hold an
//! event that never ends.

/// Feeds bytes in, takes complete events' data out.
#[derive(Debug)]
pub(crate) struct SseReader {
    buf: Vec<u8>,
    data: Option<String>,
    max_line: usize,
    max_event: usize,
    /// The last event id seen (`Last-Event-ID` when resuming).
    pub(crate) last_id: Option<String>,
    /// The last `retry:` value, in milliseconds.
    pub(crate) retry_ms: Option<u64>,
}

impl SseReader {
    /// A reader that refuses lines over `max_line` bytes and events whose data is over `max_event`.
    pub(crate) fn new(max_line: usize, max_event: usize) -> Self {
        Self { buf: Vec::new(), data: None, max_line, max_event, last_id: None, retry_ms: None }
    }

    /// Adds a chunk; returns the data of every event it completed, or why the stream must end.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        let scanned = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        // Lines already scanned hold no newline: look only at the new bytes.
        let mut from = scanned;
        while let Some(pos) = self.buf[from..].iter().position(|&b| b == b'\n').map(|p| p + from) {
            from = 0;
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                if let Some(d) = self.data.take() {
                    out.push(d);
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (&*line, ""),
            };
            if field == "id" {
                self.last_id = Some(value.to_owned());
            } else if field == "retry" {
                self.retry_ms = value.trim().parse().ok().or(self.retry_ms);
            } else if field == "data" {
                if self.data.as_ref().map_or(0, String::len) + value.len() > self.max_event {
                    return Err(format!(
                        "an event of the server's stream is larger than the limit of {} bytes",
                        self.max_event
                    ));
                }
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
        }
        if self.buf.len() > self.max_line {
            return Err(format!("a line of the server's stream is longer than the limit of {} bytes", self.max_line));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks() {
        let mut r = SseReader::new(1024, 1024);
        assert!(r.feed(b": keep-alive\r\n\r\ndata: {\"a\"").unwrap().is_empty());
        assert_eq!(r.feed(b":1}\r\n\r\nevent: message\ndata: x\ndata: y\n\n").unwrap(), vec!["{\"a\":1}", "x\ny"]);
        assert!(r.feed(b"retry: 10\nid: e-2\n\n").unwrap().is_empty());
        assert_eq!((r.retry_ms, r.last_id.as_deref()), (Some(10), Some("e-2")));
    }

    #[test]
    fn limits_end_the_stream() {
        let mut r = SseReader::new(8, 1024);
        assert!(r.feed(b"data: 12").unwrap().is_empty());
        assert!(r.feed(b"345").unwrap_err().contains("longer than the limit of 8 bytes"));
        let mut r = SseReader::new(1024, 6);
        assert!(r.feed(b"data: 1234\n").unwrap().is_empty());
        assert!(r.feed(b"data: 567\n").unwrap_err().contains("larger than the limit of 6 bytes"));
    }
}
