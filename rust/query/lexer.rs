//! Tokenizer for the expr-lang subset.
//!
//! Words (identifiers and keywords alike) are one token kind: whether `in` or
//! `type` is an operator or a name depends on where it stands, so the parser
//! decides. Numbers are converted here, so an out-of-range literal is a
//! compile error at its own position.

use super::error::{Pos, QueryError};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    /// An identifier or keyword; the text is `Token::text`.
    Word,
    /// `#` or `#name`; the name (possibly empty) is `Token::text[1..]`.
    Pointer,
    /// Operators and brackets, by their spelling.
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
pub(crate) struct Token<'a> {
    pub tok: Tok,
    /// The token exactly as written (empty for `Eof`).
    pub text: &'a str,
    pub pos: Pos,
}

impl Token<'_> {
    pub fn is(&self, punct: &str) -> bool {
        matches!(self.tok, Tok::Punct(p) if p == punct)
    }

    pub fn is_word(&self, word: &str) -> bool {
        self.tok == Tok::Word && self.text == word
    }

    /// How the token is named in "unexpected ..." messages.
    pub fn describe(&self) -> String {
        match self.tok {
            Tok::Eof => "end of expression".to_string(),
            _ => format!("token {}", self.text),
        }
    }
}

/// Longest first, so `**` wins over `*` and `?.` over `?`.
const PUNCTS: [&str; 33] = [
    "**", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "..", "(", ")", "[", "]", "{", "}", ",",
    ":", ";", ".", "+", "-", "*", "/", "%", "^", "<", ">", "=", "!", "?", "|", "&",
];

pub(crate) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, QueryError> {
    let mut lexer = Lexer {
        src,
        at: 0,
        pos: Pos { line: 1, col: 1 },
        out: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.out)
}

struct Lexer<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    at: usize,
    /// Position of the next character.
    pos: Pos,
    out: Vec<Token<'a>>,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.at..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.src[self.at..].chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.pos.line += 1;
            self.pos.col = 1;
        } else {
            self.pos.col += 1;
        }
        Some(c)
    }

    fn bump_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
    }

    fn run(&mut self) -> Result<(), QueryError> {
        loop {
            self.bump_while(char::is_whitespace);
            let (start, pos) = (self.at, self.pos);
            let Some(c) = self.peek() else {
                self.out.push(Token {
                    tok: Tok::Eof,
                    text: "",
                    pos,
                });
                return Ok(());
            };
            let tok = if self.src[self.at..].starts_with("//") {
                self.bump_while(|c| c != '\n');
                continue;
            } else if self.src[self.at..].starts_with("/*") {
                self.block_comment(pos)?;
                continue;
            } else if c.is_ascii_digit()
                || (c == '.' && self.peek_second().is_some_and(|d| d.is_ascii_digit()))
            {
                self.number(start, pos)?
            } else if c == '"' || c == '\'' {
                Tok::Str(self.quoted(pos)?)
            } else if c == '`' {
                self.raw_string(pos)?
            } else if c == '#' {
                self.bump();
                self.bump_while(is_word_char);
                Tok::Pointer
            } else if is_word_char(c) {
                self.bump_while(is_word_char);
                Tok::Word
            } else if let Some(p) = PUNCTS.iter().find(|p| self.src[self.at..].starts_with(**p)) {
                for _ in 0..p.len() {
                    self.bump();
                }
                Tok::Punct(p)
            } else {
                return Err(QueryError::compile(
                    format!("unexpected character {c:?}"),
                    pos,
                ));
            };
            self.out.push(Token {
                tok,
                text: &self.src[start..self.at],
                pos,
            });
        }
    }

    fn block_comment(&mut self, pos: Pos) -> Result<(), QueryError> {
        self.bump();
        self.bump();
        while !self.src[self.at..].starts_with("*/") {
            if self.bump().is_none() {
                return Err(QueryError::compile("unclosed comment", pos));
            }
        }
        self.bump();
        self.bump();
        Ok(())
    }

    /// Decimal, `0x`/`0o`/`0b` integers, and floats (`1.5`, `.5`, `1e3`);
    /// `_` separates digits. `1..3` is the range `1 .. 3`, not `1.` then `.3`.
    fn number(&mut self, start: usize, pos: Pos) -> Result<Tok, QueryError> {
        let bad = |what: &str| QueryError::compile(what.to_string(), pos);
        let rest = &self.src[self.at..];
        let radix = match rest.get(..2) {
            Some("0x" | "0X") => 16,
            Some("0o" | "0O") => 8,
            Some("0b" | "0B") => 2,
            _ => 10,
        };
        if radix != 10 {
            self.bump();
            self.bump();
            self.bump_while(|c| c.is_ascii_alphanumeric() || c == '_');
            let digits: String = self.src[start + 2..self.at]
                .chars()
                .filter(|&c| c != '_')
                .collect();
            return i64::from_str_radix(&digits, radix)
                .map(Tok::Int)
                .map_err(|_| bad("bad number syntax"));
        }
        let mut is_float = false;
        self.bump_while(|c| c.is_ascii_digit() || c == '_');
        if self.peek() == Some('.') && self.peek_second() != Some('.') {
            is_float = true;
            self.bump();
            self.bump_while(|c| c.is_ascii_digit() || c == '_');
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            is_float = true;
            self.bump();
            if matches!(self.peek(), Some('+' | '-')) {
                self.bump();
            }
            self.bump_while(|c| c.is_ascii_digit() || c == '_');
        }
        if self.peek().is_some_and(is_word_char) {
            return Err(bad("bad number syntax"));
        }
        let digits: String = self.src[start..self.at]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        if is_float {
            match digits.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Tok::Float(f)),
                Ok(_) => Err(bad("float literal is too large")),
                Err(_) => Err(bad("bad number syntax")),
            }
        } else {
            digits
                .parse::<i64>()
                .map(Tok::Int)
                .map_err(|_| bad("integer literal is too large"))
        }
    }

    /// A single- or double-quoted string with expr-lang's escapes.
    fn quoted(&mut self, pos: Pos) -> Result<String, QueryError> {
        let quote = self.bump();
        let mut out = String::new();
        loop {
            let esc_pos = self.pos;
            match self.bump() {
                None => return Err(QueryError::compile("string is not terminated", pos)),
                Some(c) if Some(c) == quote => return Ok(out),
                Some('\\') => out.push(self.escape(esc_pos)?),
                Some(c) => out.push(c),
            }
        }
    }

    /// The character after a backslash (already consumed).
    fn escape(&mut self, pos: Pos) -> Result<char, QueryError> {
        let bad = || QueryError::compile("invalid escape sequence in string", pos);
        let c = self.bump().ok_or_else(bad)?;
        let simple = match c {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' | '\'' | '"' | '`' | '?' => c,
            'x' | 'X' | 'u' | 'U' => {
                let width = match c {
                    'u' => 4,
                    'U' => 8,
                    _ => 2,
                };
                let mut code = 0u32;
                for _ in 0..width {
                    let digit = self.bump().and_then(|d| d.to_digit(16)).ok_or_else(bad)?;
                    code = code * 16 + digit;
                }
                return char::from_u32(code).ok_or_else(bad);
            }
            '0'..='3' => {
                let mut code = c as u32 - '0' as u32;
                for _ in 0..2 {
                    let digit = self.bump().and_then(|d| d.to_digit(8)).ok_or_else(bad)?;
                    code = code * 8 + digit;
                }
                return char::from_u32(code).ok_or_else(bad);
            }
            _ => return Err(bad()),
        };
        Ok(simple)
    }

    /// A backquoted raw string: no escapes.
    fn raw_string(&mut self, pos: Pos) -> Result<Tok, QueryError> {
        self.bump();
        let start = self.at;
        self.bump_while(|c| c != '`');
        let text = self.src[start..self.at].to_string();
        if self.bump().is_none() {
            return Err(QueryError::compile("string is not terminated", pos));
        }
        Ok(Tok::Str(text))
    }
}
