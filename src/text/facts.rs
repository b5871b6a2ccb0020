//! Facts a speaker states about themselves: "My name is Dana", "I usually take oat milk",
//! "We moved to Leeds last spring", "I found three dented panels", "The left hinge on my oven
//! door snapped".
//!
//! `compress` keeps such sentences of `user` messages when it summarises them by default (a
//! user's own facts are what an assistant most needs later, and the extractive scorer, tuned for
//! identifiers and numbers with units, would otherwise drop a sentence like "I usually take oat
//! milk"), and under a budget lists their values among the key tokens.
//!
//! A sentence states a fact when it speaks in the first person (`I`, `I'm`, `my`, `we`, `our`,
//! …) and carries at least one signal of one:
//! - a proper noun after its first word (`Dana`, `Porto`, `March`, `Thursday`);
//! - a number, in digits or in words (`48213`, `three`, `twice`, `a dozen`);
//! - a date word (`yesterday`, `last week`, a month or a weekday);
//! - a preference or habit (`prefer`, `usually`, `always`, `favourite`, `allergic`, `love`,
//!   `hate`, `can't stand`, `go-to`, `tend to`);
//! - identity or situation (`my name`, `I'm a …`, `I work as/at/for`, `I live`, `I'm from`, `born`,
//!   `married`, a family member or pet after `my`/`our`);
//! - the condition of something they have (`the hinge on my door snapped`, `the handle feels
//!   loose`, `it keeps rattling`).
//!
//! A declarative sentence that names a day or a month states a fact of the speaker's situation
//! even without a first person (`The technician comes on Thursday morning`).
//!
//! Questions (`Could you tell me …?`) and requests (`please …`, `can you …`) are not facts.
//! The test is one pass over the sentence's words with fixed word lists: no regex, no
//! allocation per word.

/// Whether `sentence` states a fact about its speaker (see the module docs).
///
/// ```
/// use condense::text::facts::is_fact;
/// assert!(is_fact("My name is Dana, by the way."));
/// assert!(is_fact("I usually take oat milk in my coffee."));
/// assert!(is_fact("When I unpacked it I found three dented panels."));
/// assert!(!is_fact("The weather was nice."));
/// assert!(!is_fact("Could you tell me what happens next?"));
/// ```
pub fn is_fact(sentence: &str) -> bool {
    let s = sentence.trim();
    if s.len() < 8 || s.ends_with('?') {
        return false;
    }
    let mut first_person = false;
    let mut signal = false;
    let mut dated = false;
    let mut prev_first_person = false; // the previous word was I / my / our / we …
    let mut prev = Lower::new("");
    let mut first = true;
    let mut after_sentence_start = false;
    for word in words(s) {
        let lower = Lower::new(word);
        let w = lower.as_str();
        if first && matches!(w, "please" | "can" | "could" | "would" | "will" | "should") {
            // A request or a question, whatever follows.
            return false;
        }
        let fp = word == "I"
            || word.starts_with("I'")
            || word.starts_with("I\u{2019}")
            || matches!(
                w,
                "my" | "me"
                    | "mine"
                    | "myself"
                    | "we"
                    | "we're"
                    | "we've"
                    | "we'd"
                    | "our"
                    | "ours"
                    | "us"
                    | "ourselves"
            );
        if fp {
            first_person = true;
        }
        if is_day_or_month(w) && (w != "may" || is_proper(word)) {
            dated = true;
        }
        if !signal {
            signal = (!first && after_sentence_start && is_proper(word))
                || is_number(word)
                || is_number_word(w)
                || is_date_word(w)
                || is_preference(w)
                || (prev_first_person && is_situation(w))
                || is_identity(w)
                || is_condition(w)
                || is_situation_pair(&prev, w);
        }
        prev_first_person = fp;
        prev = lower;
        if first {
            first = false;
            after_sentence_start = true;
        }
        if first_person && signal {
            return true;
        }
    }
    dated
}

/// The values of a fact sentence a summary should keep when it cannot keep the sentence: runs
/// of proper nouns after its first word (`Dana Lindqvist`, `Porto`), numbers (`48213`), and
/// number words with the two words after them (`three dented panels`).
///
/// ```
/// use condense::text::facts::values;
/// assert_eq!(values("I'm Dana Lindqvist and I found three dented panels."),
///            vec!["Dana Lindqvist".to_string(), "three dented panels".to_string()]);
/// ```
pub fn values(sentence: &str) -> Vec<String> {
    let ws: Vec<&str> = words(sentence.trim()).collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let w = ws[i];
        let lower = Lower::new(w);
        if i > 0 && is_proper(w) {
            let mut j = i + 1;
            while j < ws.len() && is_proper(ws[j]) {
                j += 1;
            }
            out.push(ws[i..j].join(" "));
            i = j;
            continue;
        }
        if is_number(w) && w.bytes().filter(u8::is_ascii_digit).count() >= 2 {
            out.push(w.to_string());
        } else if is_number_word(lower.as_str()) {
            let end = (i + 3).min(ws.len());
            let phrase: Vec<&str> = ws[i..end]
                .iter()
                .copied()
                .take_while(|x| !is_stop(&Lower::new(x)))
                .collect();
            if phrase.len() > 1 {
                out.push(phrase.join(" "));
            }
        }
        i += 1;
    }
    out.dedup();
    out
}

/// The words of a text: runs of letters, digits, apostrophes and hyphens inside a word.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '\u{2019}' || c == '-'))
        .filter(|w| !w.is_empty())
}

/// A word lower-cased without allocating for the common case (ASCII words of up to 24 bytes).
struct Lower {
    buf: [u8; 24],
    len: usize,
    long: Option<String>,
}

impl Lower {
    fn new(word: &str) -> Lower {
        let mut buf = [0u8; 24];
        if word.len() <= buf.len() && word.is_ascii() {
            for (b, c) in buf.iter_mut().zip(word.bytes()) {
                *b = c.to_ascii_lowercase();
            }
            Lower {
                buf,
                len: word.len(),
                long: None,
            }
        } else {
            Lower {
                buf,
                len: 0,
                long: Some(word.to_lowercase()),
            }
        }
    }

    fn as_str(&self) -> &str {
        match &self.long {
            Some(s) => s,
            None => std::str::from_utf8(&self.buf[..self.len]).unwrap_or(""),
        }
    }
}

impl std::ops::Deref for Lower {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// A capitalised word that is not all capitals (acronyms are key tokens already) and not a
/// word that is capitalised for other reasons (`I`, `OK`).
fn is_proper(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if !first.is_uppercase() || word == "I" || word.starts_with("I'") {
        return false;
    }
    let rest = chars.as_str();
    !rest.is_empty()
        && rest.chars().any(char::is_lowercase)
        && rest
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
}

fn is_number(word: &str) -> bool {
    word.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

fn is_number_word(w: &str) -> bool {
    matches!(
        w,
        "two"
            | "three"
            | "four"
            | "five"
            | "six"
            | "seven"
            | "eight"
            | "nine"
            | "ten"
            | "eleven"
            | "twelve"
            | "thirteen"
            | "fourteen"
            | "fifteen"
            | "sixteen"
            | "seventeen"
            | "eighteen"
            | "nineteen"
            | "twenty"
            | "thirty"
            | "forty"
            | "fifty"
            | "sixty"
            | "seventy"
            | "eighty"
            | "ninety"
            | "hundred"
            | "thousand"
            | "dozen"
            | "twice"
            | "thrice"
            | "couple"
            | "half"
            | "once"
    )
}

/// A word that dates something: a day or month name (not "may", which is far more often the
/// verb), or a relative day, season or occasion.
fn is_date_word(w: &str) -> bool {
    (w != "may" && is_day_or_month(w))
        || matches!(
            w,
            "yesterday"
                | "today"
                | "tomorrow"
                | "tonight"
                | "weekend"
                | "spring"
                | "summer"
                | "autumn"
                | "winter"
                | "birthday"
                | "anniversary"
        )
}

fn is_day_or_month(w: &str) -> bool {
    matches!(
        w,
        "monday"
            | "tuesday"
            | "wednesday"
            | "thursday"
            | "friday"
            | "saturday"
            | "sunday"
            | "january"
            | "february"
            | "march"
            | "april"
            | "may"
            | "june"
            | "july"
            | "august"
            | "september"
            | "october"
            | "november"
            | "december"
    )
}

/// The condition of a thing: what goes wrong with what a speaker has.
fn is_condition(w: &str) -> bool {
    matches!(
        w,
        "broken"
            | "broke"
            | "cracked"
            | "dented"
            | "scratched"
            | "chipped"
            | "bent"
            | "loose"
            | "wobbly"
            | "stiff"
            | "sticky"
            | "stuck"
            | "jammed"
            | "leaking"
            | "leaks"
            | "noisy"
            | "rattling"
            | "rattles"
            | "squeaking"
            | "squeaks"
            | "uneven"
            | "missing"
            | "faulty"
            | "damaged"
            | "torn"
            | "stained"
            | "warped"
            | "snapped"
            | "stopped"
            | "flickering"
            | "overheating"
            | "defective"
    )
}

fn is_preference(w: &str) -> bool {
    matches!(
        w,
        "prefer"
            | "prefers"
            | "preferred"
            | "preference"
            | "usually"
            | "always"
            | "never"
            | "often"
            | "favorite"
            | "favourite"
            | "allergic"
            | "allergy"
            | "love"
            | "loves"
            | "hate"
            | "hates"
            | "dislike"
            | "enjoy"
            | "stand"
            | "go-to"
            | "tend"
            | "vegetarian"
            | "vegan"
            | "only"
            | "rather"
            | "habit"
    )
}

/// Identity and situation words that make a first-person sentence a fact wherever they stand.
fn is_identity(w: &str) -> bool {
    matches!(
        w,
        "name"
            | "named"
            | "called"
            | "born"
            | "married"
            | "divorced"
            | "retired"
            | "profession"
            | "birthday"
            | "ordered"
            | "bought"
            | "purchased"
    )
}

/// Two words that make a first-person sentence a fact: where one lives or works, where one
/// moved (`live in`, `work as`, `based in`, `moved to`).
fn is_situation_pair(prev: &str, w: &str) -> bool {
    match prev {
        "live" | "lives" | "living" | "lived" => {
            matches!(w, "in" | "at" | "with" | "near" | "on" | "alone")
        }
        "work" | "works" | "worked" | "working" => matches!(w, "as" | "at" | "for"),
        "based" | "located" | "staying" => matches!(w, "in" | "at" | "near"),
        "moved" | "move" | "moving" | "relocated" => matches!(w, "to" | "from" | "here"),
        _ => false,
    }
}

/// What may follow `my`/`our` to make a fact: family, pets, home, belongings.
fn is_situation(w: &str) -> bool {
    matches!(
        w,
        "wife"
            | "husband"
            | "partner"
            | "son"
            | "daughter"
            | "daughters"
            | "sons"
            | "kids"
            | "children"
            | "child"
            | "baby"
            | "mother"
            | "mom"
            | "mum"
            | "father"
            | "dad"
            | "parents"
            | "brother"
            | "sister"
            | "family"
            | "dog"
            | "cat"
            | "pet"
            | "home"
            | "house"
            | "flat"
            | "apartment"
            | "office"
            | "car"
            | "bike"
            | "address"
            | "phone"
            | "email"
            | "account"
            | "order"
            | "job"
            | "boss"
            | "team"
            | "company"
            | "doctor"
            | "birthday"
            | "budget"
    )
}

fn is_stop(w: &str) -> bool {
    matches!(
        w,
        "the"
            | "a"
            | "an"
            | "and"
            | "or"
            | "of"
            | "to"
            | "in"
            | "on"
            | "at"
            | "for"
            | "with"
            | "since"
            | "this"
            | "that"
            | "is"
            | "are"
            | "was"
            | "were"
            | "it"
            | "i"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_person_statements_with_a_signal_are_facts() {
        for s in [
            "My name is Dana, by the way.",
            "You can call me Marek, everyone does.",
            "I live in Porto, so the delivery options might be different here.",
            "We moved to Leeds last spring and bought it for the new flat.",
            "I usually take oat milk in my coffee.",
            "I really cannot stand automated phone menus, so email is better for me.",
            "When I unpacked it I found three dented panels on the wardrobe.",
            "The left hinge on my wardrobe snapped after a few days.",
            "I also noticed that the drawer runner feels wobbly when I use it.",
            "At home we only drink decaf after six in the evening.",
            "The technician is supposed to come on Thursday morning, if that is still the plan.",
            "It has switched itself off five times since the weekend, which I find odd.",
            "My order number is 48213, in case you need it.",
            "I work as a night-shift nurse, so I am mostly free in the mornings.",
            "We have a greyhound called Pippin who is scared of the noise.",
            "I placed the order on March 3rd and it arrived a week later.",
        ] {
            assert!(is_fact(s), "{s}");
        }
    }

    #[test]
    fn other_sentences_are_not() {
        for s in [
            "The weather was nice.",
            "Could you tell me what happens next?",
            "Please send me the invoice again.",
            "Can you rewrite my essay in a formal tone.",
            "Thank you for your patience.",
            "Is that the plan?",
            "This function returns the sum of two arrays.",
            "You may want to restart it.",
        ] {
            assert!(!is_fact(s), "{s}");
        }
    }

    #[test]
    fn values_are_names_numbers_and_counted_things() {
        assert_eq!(values("My name is Dana, by the way."), vec!["Dana"]);
        assert_eq!(
            values("When I unpacked it I found three dented panels on it."),
            vec!["three dented panels"]
        );
        assert_eq!(values("My order number is 48213."), vec!["48213"]);
        assert_eq!(
            values("We moved to New Haven in 2019."),
            vec!["New Haven", "2019"]
        );
    }
}
