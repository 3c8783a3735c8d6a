#pragma once
// Namespace URIs and WS-Addressing actions of the SDC get-service path.

namespace blobstreaming::sdc::ns {

inline constexpr const char* kSoap = "http://www.w3.org/2003/05/soap-envelope";
inline constexpr const char* kWsa = "http://www.w3.org/2005/08/addressing";
inline constexpr const char* kWsx = "http://schemas.xmlsoap.org/ws/2004/09/mex";
inline constexpr const char* kWsd = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01";
inline constexpr const char* kDpws = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01";
inline constexpr const char* kMdpws = "http://standards.ieee.org/downloads/11073/11073-20702-2016";
inline constexpr const char* kSdc = "http://standards.ieee.org/downloads/11073/11073-20701-2018";
inline constexpr const char* kMsg = "http://standards.ieee.org/downloads/11073/11073-10207-2017/message";
inline constexpr const char* kPm = "http://standards.ieee.org/downloads/11073/11073-10207-2017/participant";
inline constexpr const char* kXsi = "http://www.w3.org/2001/XMLSchema-instance";

inline constexpr const char* kAnonymous = "http://www.w3.org/2005/08/addressing/anonymous";
inline constexpr const char* kFaultAction = "http://www.w3.org/2005/08/addressing/soap/fault";
inline constexpr const char* kTransferGet = "http://schemas.xmlsoap.org/ws/2004/09/transfer/Get";
inline constexpr const char* kTransferGetResponse = "http://schemas.xmlsoap.org/ws/2004/09/transfer/GetResponse";
inline constexpr const char* kGetMetadata = "http://schemas.xmlsoap.org/ws/2004/09/mex/GetMetadata/Request";
inline constexpr const char* kGetMetadataResponse = "http://schemas.xmlsoap.org/ws/2004/09/mex/GetMetadata/Response";
inline constexpr const char* kGetService = "http://standards.ieee.org/downloads/11073/11073-20701-2018/GetService/";
inline constexpr const char* kDiscoveryTo = "urn:docs-oasis-open-org:ws-dd:ns:discovery:2009:01";
inline constexpr const char* kProbe = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Probe";
inline constexpr const char* kProbeMatches = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/ProbeMatches";
inline constexpr const char* kHello = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Hello";
inline constexpr const char* kBye = "http://docs.oasis-open.org/ws-dd/ns/discovery/2009/01/Bye";
inline constexpr const char* kDialectThisModel = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/ThisModel";
inline constexpr const char* kDialectThisDevice = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/ThisDevice";
inline constexpr const char* kDialectRelationship = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/Relationship";
inline constexpr const char* kRelationshipHost = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/host";

}  // namespace blobstreaming::sdc::ns
