// What the cd_values sources share and nothing else needs: the checks and the
// message wording of the user choice, used by parsing (cd_values.cpp), the
// tuning words (cd_values_tuning.cpp), the stored layout (cd_values_layout.cpp)
// and the descriptions (cd_values_describe.cpp), so that every path refuses
// the same values with the same words. Not part of the filter's interface:
// include cd_values.hpp instead.
#pragma once

#include <string>

#include "cd_values.hpp"

namespace fz::filter::cd_detail {

// Throws fz::Error(message).
[[noreturn]] void fail(const std::string& message);

// "2 (pfpl)", and "preset 2 (pfpl)" as the subject of a message.
std::string preset_label(Preset preset);
std::string preset_who(Preset preset);

// 17 significant digits; the fewest digits that give the double back.
std::string format_double(double value);
std::string format_shortest(double value);

// A preset or mode word, refused with the list of known ones; `where` names
// the word in the message ("cd_values[0]").
Preset checked_preset(unsigned word, const char* where);
ErrorMode checked_mode(unsigned word, const char* where);

// The tuning words after the bound (cd_values_tuning.cpp), and every check of
// a user choice that both layouts share (the bound, then the tuning words).
void check_tuning_words(const UserParams& params);
void check_user_params(const UserParams& params);

}  // namespace fz::filter::cd_detail
