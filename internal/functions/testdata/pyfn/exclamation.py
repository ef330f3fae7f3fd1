from pulsar import Function


class Exclamation(Function):
    """Appends "!"; with userConfig mode=wordcount counts words in state instead."""

    def process(self, input, context):
        if context.get_user_config_value("mode") == "wordcount":
            out = []
            for word in input.split():
                context.incr_counter(word, 1)
                out.append("%s=%d" % (word, context.get_counter(word)))
            return " ".join(out)
        return input + "!"
