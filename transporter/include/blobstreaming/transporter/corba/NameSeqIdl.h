#pragma once
/// Lists of names between std::vector<std::string> and the IDL's NameSeq:
/// the one conversion the servants and the client library use.

#include <BlobStreaming.hh>

#include <string>
#include <vector>

namespace blobstreaming::corba {

inline BlobStreaming::NameSeq to_name_seq(const std::vector<std::string>& names)
{
    BlobStreaming::NameSeq seq;
    seq.length(static_cast<CORBA::ULong>(names.size()));
    for (CORBA::ULong i = 0; i < seq.length(); ++i) seq[i] = names[i].c_str();
    return seq;
}

inline std::vector<std::string> from_name_seq(const BlobStreaming::NameSeq& seq)
{
    std::vector<std::string> names;
    names.reserve(seq.length());
    for (CORBA::ULong i = 0; i < seq.length(); ++i) names.emplace_back(seq[i].in());
    return names;
}

}  // namespace blobstreaming::corba
