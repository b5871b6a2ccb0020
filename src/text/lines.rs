//! Line iteration with the `memchr` crate's scan for `\n`: the same lines as `str::lines` and
//! `str::split_inclusive('\n')`. The standard library's own search is a word at a time on
//! wasm32; memchr's uses 128-bit SIMD there (and AVX2 natively), and the detectors, the fence
//! splitter and the paragraph splitter walk every line of every message.

/// The lines of `text` with their `\n` kept, as `text.split_inclusive('\n')` gives them.
pub(crate) fn inclusive(text: &str) -> Inclusive<'_> {
    Inclusive { rest: text }
}

/// The lines of `text` without their ending (`\n` or `\r\n`), as `text.lines()` gives them.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = &str> {
    inclusive(text).map(|line| {
        let Some(line) = line.strip_suffix('\n') else {
            return line;
        };
        line.strip_suffix('\r').unwrap_or(line)
    })
}

/// The iterator of [`inclusive`].
pub(crate) struct Inclusive<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Inclusive<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        // `\n` is ASCII, so the byte after it is a character boundary.
        let cut = memchr::memchr(b'\n', self.rest.as_bytes()).map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at_checked(cut)?;
        self.rest = rest;
        Some(line)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same lines as the standard library's, endings and all.
        #[test]
        fn lines_agree_with_std(text in "([a-z ]{0,6}|\n|\r|\r\n|é|中)*") {
            prop_assert_eq!(
                inclusive(&text).collect::<Vec<_>>(),
                text.split_inclusive('\n').collect::<Vec<_>>()
            );
            prop_assert_eq!(lines(&text).collect::<Vec<_>>(), text.lines().collect::<Vec<_>>());
        }
    }

    #[test]
    fn edges() {
        assert_eq!(inclusive("").count(), 0);
        assert_eq!(
            lines("a\r\nb\n\nc\r").collect::<Vec<_>>(),
            ["a", "b", "", "c\r"]
        );
        assert_eq!(inclusive("a\n").collect::<Vec<_>>(), ["a\n"]);
    }
}
