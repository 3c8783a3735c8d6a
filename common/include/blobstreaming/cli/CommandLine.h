#pragma once
/// What every Blob Streaming program's command line shares (docs/CLI.md,
/// "Common options"): Boost.Program_options without abbreviations, the
/// logging flags and `--version`.
///
/// Logging flags, the same in every program:
///   -q/--quiet      errors only (level error)
///   -v/--verbose    information (level info)
///   -d/--debug      debug detail (level debug)
///   --log-level L   trace, debug, info, warning (warn), error, critical or off
/// Precedence: --log-level wins over the flags; among the flags the most
/// verbose wins (-d over -v over -q); without any, the program's default
/// (blobstored: info; the other programs: warning).

#include <blobstreaming/cli/Values.h>

#include <boost/program_options.hpp>
#include <spdlog/common.h>

#include <optional>
#include <string>
#include <vector>

namespace blobstreaming::cli {

/// Unix style without guessing: `--stor` is refused ("unrecognised option
/// '--stor'"), not taken for `--store`.
int command_line_style() noexcept;

/// `po::command_line_parser(args)` with command_line_style().
boost::program_options::command_line_parser command_line_parser(int argc, const char* const* argv);
boost::program_options::command_line_parser command_line_parser(const std::vector<std::string>& args);

/// Adds -q, -v, -d (switches) and --log-level LEVEL to `options`;
/// `default_level` is only shown in the help text.
void add_logging_options(boost::program_options::options_description& options, spdlog::level::level_enum default_level);

/// The level the logging options in `vm` ask for (precedence above), else
/// `default_level`. Throws UsageError for an unknown --log-level.
spdlog::level::level_enum log_level(const boost::program_options::variables_map& vm,
                                    spdlog::level::level_enum default_level);

/// "-q" was given.
bool quiet(const boost::program_options::variables_map& vm);

/// A library a program links and its version, for --version.
struct LinkedLibrary {
    std::string name;
    std::string version;
};

/// The text of `--version`: "PROGRAM (Blob Streaming) VERSION", then one
/// line per library, `libraries` first, then what this library links
/// itself (Boost, spdlog). Ends in a newline.
std::string version_text(const std::string& program, const std::vector<LinkedLibrary>& libraries);

/// This build's version ("0.1.0").
const char* package_version() noexcept;

/// What a program prints and then exits 0 with when `vm` has --help (the
/// options, then `epilogue`) or --version (version_text()); nullopt
/// otherwise.
std::optional<std::string> help_or_version(const boost::program_options::variables_map& vm,
                                           const boost::program_options::options_description& options,
                                           const std::string& program, const std::vector<LinkedLibrary>& libraries,
                                           const std::string& epilogue = {});

}  // namespace blobstreaming::cli
