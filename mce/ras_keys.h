// Every key a RAS decoding's JSON object (mce/ras_events.h, ras_json())
// can have, over all its sources: what watch's match language accepts as
// the names of a RAS record's decoding, since it refuses a name no record
// has. mce/ras_events_test.cpp and watch/match_test.cpp check the list
// against the decoders.
#pragma once

#include <string_view>
#include <vector>

namespace pp::mce {

const std::vector<std::string_view>& ras_json_keys();

}  // namespace pp::mce
