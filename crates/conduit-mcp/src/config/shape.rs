//! The shapes a configuration value may take, each with the words its error
//! uses (`must be a positive integer`): one place for every table's numbers,
//! rates, word lists and switches.

use crate::quota::RateLimit;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A value read from an integer or a string, and what it must be.
pub(crate) trait Shape: Sized {
    /// What the value must be, for the error (`a positive integer`).
    const EXPECTING: &'static str;
    /// The value of an integer, if it fits.
    fn from_int(_: i64) -> Option<Self> {
        None
    }
    /// The value of a string, if it fits.
    fn from_str(_: &str) -> Option<Self> {
        None
    }
}

struct ShapeVisitor<T>(PhantomData<T>);

impl<T: Shape> Visitor<'_> for ShapeVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        T::from_int(n).ok_or_else(|| E::invalid_value(Unexpected::Signed(n), &self))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        i64::try_from(n).ok().and_then(T::from_int).ok_or_else(|| E::invalid_value(Unexpected::Unsigned(n), &self))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::from_str(s).ok_or_else(|| E::invalid_value(Unexpected::Str(s), &self))
    }
}

/// Reads a [`Shape`] (its `Deserialize`).
pub(crate) fn shaped<'de, D: Deserializer<'de>, T: Shape>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(ShapeVisitor(PhantomData))
}

/// A positive integer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Positive(pub(crate) u64);

impl Positive {
    /// As a count.
    pub(crate) fn count(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl Shape for Positive {
    const EXPECTING: &'static str = "a positive integer";
    fn from_int(n: i64) -> Option<Self> {
        u64::try_from(n).ok().filter(|n| *n > 0).map(Self)
    }
}

/// An integer of zero or more.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) struct NonNegative(pub(crate) u64);

impl Shape for NonNegative {
    const EXPECTING: &'static str = "a non-negative integer";
    fn from_int(n: i64) -> Option<Self> {
        u64::try_from(n).ok().map(Self)
    }
}

/// A positive integer, or `"unlimited"` (`None`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PositiveOrUnlimited(pub(crate) Option<usize>);

impl Shape for PositiveOrUnlimited {
    const EXPECTING: &'static str = "a positive integer or \"unlimited\"";
    fn from_int(n: i64) -> Option<Self> {
        Positive::from_int(n).map(|p| Self(Some(p.count())))
    }
    fn from_str(s: &str) -> Option<Self> {
        (s == "unlimited").then_some(Self(None))
    }
}

/// A rate per client (`"50/s"`, `"600/min"`, `"50/s,burst=100"`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate(pub(crate) RateLimit);

impl Shape for Rate {
    const EXPECTING: &'static str = "a rate such as \"50/s\", \"600/min\" or \"50/s,burst=100\"";
    fn from_str(s: &str) -> Option<Self> {
        s.parse().ok().map(Self)
    }
}

/// A rate, or `"off"` (`None`).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct RateOrOff(pub(crate) Option<RateLimit>);

impl Shape for RateOrOff {
    const EXPECTING: &'static str = "a rate such as \"30/min,burst=20\", or \"off\"";
    fn from_str(s: &str) -> Option<Self> {
        if s == "off" { Some(Self(None)) } else { Rate::from_str(s).map(|r| Self(Some(r.0))) }
    }
}

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

impl<'de> Deserialize<'de> for NonNegative {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

impl<'de> Deserialize<'de> for PositiveOrUnlimited {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

impl<'de> Deserialize<'de> for RateOrOff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        shaped(d)
    }
}

/// A list of words: an array of strings, or one space-separated string.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) struct Words(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct WordsVisitor;
        impl<'de> Visitor<'de> for WordsVisitor {
            type Value = Words;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Words, E> {
                Ok(Words(s.split_whitespace().map(str::to_owned).collect()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Words, A::Error> {
                let mut words = Vec::new();
                while let Some(w) = seq.next_element::<String>()? {
                    words.push(w);
                }
                Ok(Words(words))
            }
        }
        d.deserialize_any(WordsVisitor)
    }
}

/// `true`, `false`, or a table of settings (which means on).
#[derive(Debug, Clone)]
pub(crate) enum Switch<T> {
    /// `true`: on, with defaults.
    On,
    /// `false`: off.
    Off,
    /// A table: on, with these settings.
    Table(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Switch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SwitchVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for SwitchVisitor<T> {
            type Value = Switch<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or a table")
            }
            fn visit_bool<E: de::Error>(self, on: bool) -> Result<Switch<T>, E> {
                Ok(if on { Switch::On } else { Switch::Off })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Switch<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Switch::Table)
            }
        }
        d.deserialize_any(SwitchVisitor(PhantomData))
    }
}
