#pragma once
/// DICOM matching (PS3.4 C.2.2.2) of `KEY=VALUE` query terms, turned into
/// an SQL condition over the study index's columns (StudyIndex).
///
///   text    `*` and `?` wildcards (GLOB), otherwise single value matching;
///           ModalitiesInStudy takes a `\`-separated list (any of them)
///   uid     one UID or a list `UID\UID\...` (any of them), no wildcards
///   date    YYYYMMDD, or a range YYYYMMDD-YYYYMMDD, YYYYMMDD-, -YYYYMMDD
///   time    HH, HHMM, HHMMSS or HHMMSS.FFFFFF, or a range of those
///   number  an integer
/// An empty value or a lone `*` matches everything (universal matching).
/// A list is one SQL parameter (a JSON array), however long; at most
/// kMaxListValues values. A value holding a NUL byte is refused.
/// Every malformed term is refused with Errc::invalid_argument naming the
/// term and what is allowed.

#include "Attributes.h"

#include <cstddef>
#include <string>
#include <vector>

namespace blobstreaming::dicom {

/// The most values a list key (UIDs, ModalitiesInStudy) may carry.
inline constexpr std::size_t kMaxListValues = 4096;

struct Match {
    const Attribute* attribute = nullptr;
    std::string value;
};

/// Parses `KEY=VALUE` terms (KEY: a keyword of attributes(), once each).
std::vector<Match> parse_matches(const std::vector<std::string>& terms);

/// Refuses `match` when its value is malformed for its attribute's kind,
/// as parse_matches() does (Errc::invalid_argument naming it).
void check_match(const Match& match);

/// The SQL of the two index databases: wildcards are GLOB in SQLite, LIKE
/// (with `\` escapes) in PostgreSQL, whose ranges compare in the "C"
/// collation (byte order, as SQLite does).
enum class Dialect { sqlite, postgresql };

/// `"keyword"`: identifiers are quoted (PostgreSQL would fold them to lower
/// case otherwise).
std::string quoted(const std::string& identifier);

/// The SQL expression of `attribute`'s value in a row of instances (or
/// conflicts): its column, or for one kept in the header column
/// (Attribute::in_header) the value there ('' when the instance has none).
std::string column_of(const Attribute& attribute, Dialect dialect);

/// The SQL condition of `matches` (joined with AND; "1=1" when empty) with
/// `?` placeholders whose text values are appended to `params` in order.
std::string sql_condition(const std::vector<Match>& matches, std::vector<std::string>& params,
                          Dialect dialect = Dialect::sqlite);

}  // namespace blobstreaming::dicom
