//! A small incremental reader of `text/event-stream` bodies: it gathers the
//! `data:` lines of each event and hands out the event's data; comments,
//! `event:`, `id:` and `retry:` fields are read and ignored.

/// Feeds bytes in, takes complete events' data out.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    buf: Vec<u8>,
    data: Option<String>,
}

impl SseReader {
    /// Adds a chunk; returns the data of every event it completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
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
            if field == "data" {
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks() {
        let mut r = SseReader::default();
        assert!(r.feed(b": keep-alive\r\n\r\ndata: {\"a\"").is_empty());
        assert_eq!(r.feed(b":1}\r\n\r\nevent: message\ndata: x\ndata: y\n\n"), vec!["{\"a\":1}", "x\ny"]);
        assert!(r.feed(b"retry: 10\n\n").is_empty());
    }
}
