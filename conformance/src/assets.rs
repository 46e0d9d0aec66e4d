//! Small binary payloads returned by the fixture, base64-encoded.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::sync::LazyLock;

/// A valid 1×1 PNG (one opaque pixel).
pub(crate) const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A valid WAV file (0.1 s of a 440 Hz tone, 8 kHz, mono, 8-bit PCM).
pub(crate) static WAV_BASE64: LazyLock<String> = LazyLock::new(|| STANDARD.encode(wav_tone()));

/// Builds a RIFF/WAVE file: a 44-byte header followed by unsigned 8-bit samples.
fn wav_tone() -> Vec<u8> {
    const SAMPLE_RATE: u32 = 8_000;
    const SAMPLES: u32 = SAMPLE_RATE / 10;
    let mut w = Vec::with_capacity(44 + SAMPLES as usize);
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&(36 + SAMPLES).to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&SAMPLE_RATE.to_le_bytes());
    w.extend_from_slice(&SAMPLE_RATE.to_le_bytes()); // byte rate = rate × 1 byte
    w.extend_from_slice(&1u16.to_le_bytes()); // block align
    w.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    w.extend_from_slice(b"data");
    w.extend_from_slice(&SAMPLES.to_le_bytes());
    for i in 0..SAMPLES {
        let phase = 2.0 * std::f64::consts::PI * 440.0 * f64::from(i) / f64::from(SAMPLE_RATE);
        // Centred on 128, amplitude 100: always within 28..=228.
        w.push((128.0 + 100.0 * phase.sin()).round() as u8);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_decode() {
        let png = STANDARD.decode(PNG_BASE64).expect("valid base64");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let wav = STANDARD.decode(WAV_BASE64.as_str()).expect("valid base64");
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(wav.len(), 44 + 800);
    }
}
