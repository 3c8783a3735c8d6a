#include "Matching.h"

#include <blobstreaming/common/Error.h>
#include <blobstreaming/common/Text.h>

#include <nlohmann/json.hpp>

#include <cctype>

namespace blobstreaming::dicom {

namespace {

/// A value as a message quotes it: control characters shown, at most 80 bytes.
std::string shown(const std::string& value)
{
    constexpr std::size_t kShown = 80;
    return value.size() <= kShown ? printable(value) : printable(value.substr(0, kShown)) + "...";
}

[[noreturn]] void refuse(const Match& m, const std::string& why)
{
    throw Error(Errc::invalid_argument,
                "find: " + std::string(m.attribute->keyword) + "=" + shown(m.value) + ": " + why);
}

bool all_digits(const std::string& s)
{
    for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return !s.empty();
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const auto end = s.find(sep, start);
        parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

bool valid_date(const std::string& d)
{
    if (d.size() != 8 || !all_digits(d)) return false;
    const int year = std::stoi(d.substr(0, 4)), month = std::stoi(d.substr(4, 2)), day = std::stoi(d.substr(6, 2));
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1 || day > days[month - 1]) return false;
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return !(month == 2 && day == 29 && !leap);
}

bool valid_time(const std::string& t)
{
    const auto dot = t.find('.');
    const std::string whole = t.substr(0, dot);
    if (whole.size() != 2 && whole.size() != 4 && whole.size() != 6) return false;
    if (!all_digits(whole)) return false;
    if (std::stoi(whole.substr(0, 2)) > 23) return false;
    if (whole.size() >= 4 && std::stoi(whole.substr(2, 2)) > 59) return false;
    if (whole.size() == 6 && std::stoi(whole.substr(4, 2)) > 60) return false;  // 60: a leap second
    if (dot == std::string::npos) return true;
    const std::string fraction = t.substr(dot + 1);
    return whole.size() == 6 && fraction.size() <= 6 && all_digits(fraction);
}

bool valid_uid(const std::string& u)
{
    if (u.empty() || u.size() > 64 || u.front() == '.' || u.back() == '.') return false;
    for (char c : u) {
        if (c != '.' && !std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return u.find("..") == std::string::npos;
}

/// The GLOB (SQLite) or LIKE (PostgreSQL) pattern of a DICOM value with
/// wildcards `*` and `?`; every other character matches itself.
std::string pattern_of(const std::string& value, Dialect dialect)
{
    std::string pattern;
    for (char c : value) {
        if (dialect == Dialect::sqlite) pattern += c == '[' ? std::string("[[]") : std::string(1, c);
        else if (c == '*') pattern += '%';
        else if (c == '?') pattern += '_';
        else if (c == '%' || c == '_' || c == '\\') pattern += std::string("\\") + c;
        else pattern += c;
    }
    return pattern;
}

/// `col GLOB pattern` (SQLite) or `col LIKE pattern` (PostgreSQL) for a
/// value with wildcards, `col = value` otherwise.
std::string text_condition(const std::string& column, const std::string& value, std::vector<std::string>& params,
                           Dialect dialect)
{
    if (value.find_first_of("*?") == std::string::npos) {
        params.push_back(value);
        return column + " = ?";
    }
    params.push_back(pattern_of(value, dialect));
    return column + (dialect == Dialect::sqlite ? " GLOB ?" : " LIKE ?");
}

/// The values of a list key (`A\B\...`), checked: at most kMaxListValues.
std::vector<std::string> list_values(const Match& m)
{
    std::vector<std::string> values = split(m.value, '\\');
    if (values.size() > kMaxListValues)
        throw Error(Errc::invalid_argument, "find: " + std::string(m.attribute->keyword) + ": " +
                                                std::to_string(values.size()) + " values, at most " +
                                                std::to_string(kMaxListValues) + " allowed in a list");
    return values;
}

/// One parameter holding every value of a list, and the rows it makes: the
/// statement's size does not grow with the list (SQLite refuses an
/// expression tree deeper than 1000).
std::string list_rows(const std::vector<std::string>& values, std::vector<std::string>& params, Dialect dialect)
{
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& v : values) list.push_back(v);
    params.push_back(list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return dialect == Dialect::sqlite ? "SELECT value FROM json_each(?)"
                                      : "SELECT json_array_elements_text(CAST(? AS json)) AS value";
}

/// A range condition for dates and times (`lo-hi`, `lo-`, `-hi`) or equality.
std::string range_condition(const Match& m, bool (*valid)(const std::string&), const char* form,
                            std::vector<std::string>& params, Dialect dialect)
{
    const std::string column =
        column_of(*m.attribute, dialect) + (dialect == Dialect::postgresql ? " COLLATE \"C\"" : "");
    const auto dash = m.value.find('-');
    if (dash == std::string::npos) {
        if (!valid(m.value)) refuse(m, std::string("expected ") + form + " or a range of them (A-B, A-, -B)");
        params.push_back(m.value);
        return column + " = ?";
    }
    const std::string lo = m.value.substr(0, dash), hi = m.value.substr(dash + 1);
    if ((lo.empty() && hi.empty()) || (!lo.empty() && !valid(lo)) || (!hi.empty() && !valid(hi)))
        refuse(m, std::string("expected a range of ") + form + " (A-B, A-, -B), each a valid value");
    if (!lo.empty() && !hi.empty() && hi < lo) refuse(m, "the range ends before it starts");
    std::string sql = "(" + column + " <> ''";
    if (!lo.empty()) {
        sql += " AND " + column + " >= ?";
        params.push_back(lo);
    }
    if (!hi.empty()) {
        // A time range's end covers that whole hour or minute: 10-11 ends at 11:59:59.
        sql += " AND " + column + " <= ?";
        params.push_back(m.attribute->kind == Kind::time ? hi + "~" : hi);
    }
    return sql + ")";
}

std::string condition(const Match& m, std::vector<std::string>& params, Dialect dialect)
{
    const std::string column = column_of(*m.attribute, dialect);
    if (m.value.empty() || m.value == "*") return {};
    switch (m.attribute->kind) {
    case Kind::text:
        if (m.attribute->derived) {  // ModalitiesInStudy: studies with a series of any of these modalities
            std::vector<std::string> patterns;
            for (const std::string& modality : list_values(m)) {
                if (modality.empty()) refuse(m, "an empty modality in the list");
                patterns.push_back(pattern_of(modality, dialect));
            }
            return "\"StudyInstanceUID\" IN (SELECT \"StudyInstanceUID\" FROM instances AS i WHERE EXISTS (SELECT 1 "
                   "FROM (" +
                   list_rows(patterns, params, dialect) + ") AS m WHERE i.\"Modality\" " +
                   (dialect == Dialect::sqlite ? "GLOB" : "LIKE") + " m.value))";
        }
        if (m.value.find('\\') != std::string::npos)
            refuse(m, "a list (\\) is allowed for UIDs and ModalitiesInStudy only");
        return text_condition(column, m.value, params, dialect);
    case Kind::uid: {
        if (m.value.find_first_of("*?") != std::string::npos)
            refuse(m, "UIDs match exactly: no wildcards (a list UID\\UID... matches any of them)");
        const std::vector<std::string> uids = list_values(m);
        for (const std::string& uid : uids) {
            if (!valid_uid(uid))
                refuse(m, "\"" + shown(uid) + "\" is not a UID (digits and single dots, at most 64 characters)");
        }
        if (uids.size() == 1) {
            params.push_back(uids.front());
            return column + " = ?";
        }
        return column + " IN (" + list_rows(uids, params, dialect) + ")";
    }
    case Kind::date: return range_condition(m, valid_date, "a date YYYYMMDD", params, dialect);
    case Kind::time: return range_condition(m, valid_time, "a time HH, HHMM, HHMMSS or HHMMSS.FFFFFF", params, dialect);
    case Kind::number:
        if (!all_digits(m.value) || m.value.size() > 9) refuse(m, "expected a non-negative integer (at most 9 digits)");
        params.push_back(m.value);
        return column + " = ?";
    }
    return {};
}

}  // namespace

std::vector<Match> parse_matches(const std::vector<std::string>& terms)
{
    std::vector<Match> matches;
    for (const std::string& term : terms) {
        const auto eq = term.find('=');
        if (eq == std::string::npos)
            throw Error(Errc::invalid_argument,
                        "find: \"" + shown(term) + "\" is not KEY=VALUE (keys: " + attribute_list() + ")");
        const std::string key = term.substr(0, eq);
        const Attribute* a = find_attribute(key);
        if (!a)
            throw Error(Errc::invalid_argument,
                        "find: unknown key \"" + shown(key) + "\" (keys: " + attribute_list() + ")");
        for (const Match& m : matches) {
            if (m.attribute == a) throw Error(Errc::invalid_argument, "find: key " + key + " given twice");
        }
        if (term.find('\0', eq) != std::string::npos)
            throw Error(Errc::invalid_argument, "find: " + key + ": a NUL byte at position " +
                                                    std::to_string(term.find('\0', eq) - eq - 1) +
                                                    " of the value (not allowed)");
        matches.push_back({a, term.substr(eq + 1)});
        std::vector<std::string> ignored;
        condition(matches.back(), ignored,
                  Dialect::sqlite);  // refuses a malformed value now, before any index is opened
    }
    return matches;
}

void check_match(const Match& match)
{
    std::vector<std::string> ignored;
    condition(match, ignored, Dialect::sqlite);
}

std::string quoted(const std::string& identifier) { return "\"" + identifier + "\""; }

std::string column_of(const Attribute& attribute, Dialect dialect)
{
    if (!attribute.in_header) return quoted(attribute.keyword);
    // The keyword is letters and digits (header_attribute()): safe inside
    // the literal. A header not read yet ('', an index made before the
    // column) has no value.
    return dialect == Dialect::sqlite
               ? "COALESCE(json_extract(NULLIF(\"header\", ''), '$." + std::string(attribute.keyword) + "'), '')"
               : "COALESCE(CAST(NULLIF(\"header\", '') AS jsonb) ->> '" + std::string(attribute.keyword) + "', '')";
}

std::string sql_condition(const std::vector<Match>& matches, std::vector<std::string>& params, Dialect dialect)
{
    std::string sql;
    for (const Match& m : matches) {
        const std::string c = condition(m, params, dialect);
        if (!c.empty()) sql += (sql.empty() ? "" : " AND ") + c;
    }
    return sql.empty() ? "1=1" : sql;
}

}  // namespace blobstreaming::dicom
