#ifndef MIRROR_CLIBXML2_SHIM_H
#define MIRROR_CLIBXML2_SHIM_H

#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, so encoding.h includes the system's <unicode/ucnv.h>, whose
// UErrorCode clashes with the one in Foundation's own ICU module and breaks any Swift module that
// imports both. Only xmlCharEncodingHandler's layout depends on this macro, and mirror never
// touches that struct (it passes no encoding handlers), so hiding ICU here is safe.
#undef LIBXML_ICU_ENABLED
#include <libxml/xmlreader.h>
#include <libxml/parser.h>
#include <libxml/uri.h>

// xmlFree is a global function pointer (XMLPUBVAR); Swift 6 refuses to touch mutable globals,
// so it is called from here.
static inline void mirror_xml_free(void *pointer) {
    xmlFree(pointer);
}

#endif
